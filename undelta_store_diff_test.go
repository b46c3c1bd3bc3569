package cache

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	clientcache "k8s.io/client-go/tools/cache"
)

// TestUndeltaStoreMatchesClientGo applies the same writes and reads to both
// undelta stores and compares every push (as a sorted list) and read.
func TestUndeltaStoreMatchesClientGo(t *testing.T) {
	pods := []interface{}{newTestPod("ns", "a", "1"), newTestPod("ns", "b", "2"), newTestPod("ns", "a", "3")}
	var runs [2][]string
	for i, ours := range []bool{false, true} {
		var log []string
		push := func(objs []interface{}) {
			var names []string
			for _, o := range objs {
				key, _ := MetaNamespaceKeyFunc(o)
				names = append(names, key)
			}
			sort.Strings(names)
			log = append(log, fmt.Sprintf("push %v nil=%v", names, objs == nil))
		}
		var s Store
		if ours {
			s = NewUndeltaStore(push, MetaNamespaceKeyFunc)
		} else {
			s = clientcache.NewUndeltaStore(push, clientcache.MetaNamespaceKeyFunc)
		}
		record := func(what string, err error) { log = append(log, fmt.Sprint(what, " ", err)) }
		record("add", s.Add(pods[0]))
		record("add", s.Add(pods[1]))
		record("update", s.Update(pods[2]))
		_, exists, err := s.GetByKey("ns/a")
		record(fmt.Sprint("get ", exists), err)
		keys := s.ListKeys()
		sort.Strings(keys)
		log = append(log, fmt.Sprint("keys ", keys, " list ", len(s.List())))
		record("delete", s.Delete(pods[1]))
		record("replace", s.Replace([]interface{}{pods[1]}, "9"))
		record("resync", s.Resync())
		record("replace empty", s.Replace(nil, "10"))
		runs[i] = log
	}
	assert.Equal(t, runs[0], runs[1])
}
