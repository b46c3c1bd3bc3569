package cache

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/sets"
	clientcache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

// expirationView is what a caller of an expiration store sees.
type expirationView interface {
	Add(obj interface{}) error
	Update(obj interface{}) error
	Delete(obj interface{}) error
	Get(obj interface{}) (interface{}, bool, error)
	GetByKey(key string) (interface{}, bool, error)
	List() []interface{}
	ListKeys() []string
	Replace(list []interface{}, rv string) error
	Resync() error
}

type expirationItem struct{ id, val string }

func expirationItemKey(obj interface{}) (string, error) {
	if e, ok := obj.(expirationItem); ok {
		return e.id, nil
	}
	return "", fmt.Errorf("not an item: %T", obj)
}

// TestExpirationStoreMatchesClientGo runs the situations of client-go's
// expiration cache tests (expiry on read, re-adding an expired key, lists
// that expire what they pass, never-expiring keys, replace) on both fake
// expiration stores and compares every read and every expiry reported.
func TestExpirationStoreMatchesClientGo(t *testing.T) {
	type op func(s expirationView) string
	add := func(id, val string) op {
		return func(s expirationView) string { return fmt.Sprint("add ", s.Add(expirationItem{id, val})) }
	}
	get := func(id string) op {
		return func(s expirationView) string {
			obj, ok, err := s.GetByKey(id)
			return fmt.Sprint("get ", id, obj, ok, err)
		}
	}
	getObj := func(id string) op {
		return func(s expirationView) string {
			obj, ok, err := s.Get(expirationItem{id: id})
			return fmt.Sprint("getObj ", id, obj, ok, err)
		}
	}
	list := func(s expirationView) string {
		var out []string
		for _, obj := range s.List() {
			out = append(out, fmt.Sprint(obj))
		}
		sort.Strings(out)
		keys := s.ListKeys()
		sort.Strings(keys)
		return fmt.Sprint("list ", out, keys)
	}
	replace := func(ids ...string) op {
		return func(s expirationView) string {
			var items []interface{}
			for _, id := range ids {
				items = append(items, expirationItem{id, "r"})
			}
			return fmt.Sprint("replace ", s.Replace(items, "1"))
		}
	}
	del := func(id string) op {
		return func(s expirationView) string { return fmt.Sprint("delete ", s.Delete(expirationItem{id: id})) }
	}
	for name, tc := range map[string]struct {
		never []string
		ops   []op
	}{
		"expired on read":      {ops: []op{add("foo", "bar"), getObj("foo"), get("foo")}},
		"re-add expired":       {never: []string{"foo"}, ops: []op{add("foo", "bar"), get("foo"), add("foo", "other"), get("foo")}},
		"list expires":         {never: []string{"foo1"}, ops: []op{add("foo", "a"), add("foo1", "b"), add("foo2", "c"), list, list}},
		"replace then read":    {never: []string{"a", "b"}, ops: []op{add("x", "1"), replace("a", "b"), list, get("x"), get("a")}},
		"delete never-expired": {never: []string{"a"}, ops: []op{add("a", "1"), del("a"), get("a"), del("missing"), list}},
		"update":               {never: []string{"a"}, ops: []op{add("a", "1"), func(s expirationView) string { return fmt.Sprint(s.Update(expirationItem{"a", "2"})) }, get("a")}},
	} {
		t.Run(name, func(t *testing.T) {
			var runs [2][]string
			for i, ours := range []bool{false, true} {
				deleted := make(chan string, 100)
				var s expirationView
				retrieve := func(obj interface{}) (string, error) {
					return obj.(*clientcache.TimestampedEntry).Obj.(expirationItem).id, nil
				}
				clk := clocktesting.NewFakeClock(time.Unix(100, 0))
				if ours {
					s = NewFakeExpirationStore(expirationItemKey, deleted, &FakeExpirationPolicy{NeverExpire: sets.New(tc.never...), RetrieveKeyFunc: retrieve}, clk)
				} else {
					s = clientcache.NewFakeExpirationStore(expirationItemKey, deleted, &clientcache.FakeExpirationPolicy{NeverExpire: sets.New(tc.never...), RetrieveKeyFunc: retrieve}, clk)
				}
				for _, o := range tc.ops {
					runs[i] = append(runs[i], o(s))
				}
				close(deleted)
				var expired []string
				for k := range deleted {
					expired = append(expired, k)
				}
				sort.Strings(expired)
				runs[i] = append(runs[i], fmt.Sprint("expired ", expired))
			}
			assert.Equal(t, runs[0], runs[1])
		})
	}
}
