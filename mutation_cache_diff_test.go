package cache

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// mutationReads is what both mutation caches offer a caller.
type mutationReads interface {
	GetByKey(key string) (interface{}, bool, error)
	ByIndex(indexName, indexKey string) ([]interface{}, error)
	Mutation(obj interface{})
	OnAddOrUpdate(obj runtime.Object)
	OnDelete(obj runtime.Object)
}

// mutationWorld is a backing store, an indexer by pod name and a mutation
// cache over them, from one implementation.
type mutationWorld struct {
	store, indexer interface {
		Add(obj interface{}) error
		Update(obj interface{}) error
		Delete(obj interface{}) error
	}
	mc mutationReads
}

func newMutationWorld(ours, includeAdds bool) mutationWorld {
	byName := func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Name}, nil }
	if ours {
		store, indexer := NewStore(MetaNamespaceKeyFunc), NewIndexer(MetaNamespaceKeyFunc, Indexers{"by-name": byName})
		return mutationWorld{store, indexer, NewIntegerResourceVersionMutationCache(klog.Background(), store, indexer, time.Hour, includeAdds)}
	}
	store, indexer := clientcache.NewStore(clientcache.MetaNamespaceKeyFunc), clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{"by-name": byName})
	return mutationWorld{store, indexer, clientcache.NewIntegerResourceVersionMutationCache(klog.Background(), store, indexer, time.Hour, includeAdds)}
}

func mutationPod(uid, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", UID: types.UID(uid), ResourceVersion: rv}}
}

// mutationStep is one call on a world; "informer" steps write the backing
// store and the indexer, as an informer would, and tell the cache.
type mutationStep func(w mutationWorld)

func informerAdd(p *v1.Pod) mutationStep {
	return func(w mutationWorld) { _ = w.store.Add(p); _ = w.indexer.Add(p) }
}
func informerDelete(p *v1.Pod) mutationStep {
	return func(w mutationWorld) { _ = w.store.Delete(p); _ = w.indexer.Delete(p) }
}
func notifyAddOrUpdate(p *v1.Pod) mutationStep {
	return func(w mutationWorld) { w.mc.OnAddOrUpdate(p) }
}
func notifyDelete(p *v1.Pod) mutationStep { return func(w mutationWorld) { w.mc.OnDelete(p) } }
func mutate(p *v1.Pod) mutationStep       { return func(w mutationWorld) { w.mc.Mutation(p) } }

func describeMutationPod(obj interface{}) string {
	if p, ok := obj.(*v1.Pod); ok {
		return string(p.UID) + "@" + p.ResourceVersion
	}
	return fmt.Sprintf("%T", obj)
}

// listed is what ByIndex shows for "pod".
func (w mutationWorld) listed() string {
	items, err := w.mc.ByIndex("by-name", "pod")
	var out []string
	for _, it := range items {
		out = append(out, describeMutationPod(it))
	}
	sort.Strings(out)
	return fmt.Sprintf("byIndex=%v err=%v", out, err)
}

// got is what GetByKey shows for "pod". It is read only once, at the end:
// client-go's GetByKey forgets an unseen local add as it returns it (a
// difference the README lists), which would make every later read differ.
func (w mutationWorld) got() string {
	obj, exists, err := w.mc.GetByKey("pod")
	if !exists {
		return fmt.Sprintf("get=absent err=%v", err)
	}
	return fmt.Sprintf("get=%s err=%v", describeMutationPod(obj), err)
}

// TestMutationCacheMatchesClientGo replays the situations client-go's own
// tests describe (stale mutations after deletes and recreations, clearing
// by newer informer events) on both caches and compares every read.
func TestMutationCacheMatchesClientGo(t *testing.T) {
	a1, a2, a3, b3 := mutationPod("uid-1", "1"), mutationPod("uid-1", "2"), mutationPod("uid-1", "3"), mutationPod("uid-2", "3")
	for name, tc := range map[string]struct {
		includeAdds bool
		steps       []mutationStep
	}{
		"equal rv clears":           {steps: []mutationStep{mutate(a2), notifyAddOrUpdate(a2), informerAdd(a1)}},
		"newer store clears":        {steps: []mutationStep{mutate(a2), notifyAddOrUpdate(a3), informerAdd(a1)}},
		"older store keeps":         {steps: []mutationStep{mutate(a2), notifyAddOrUpdate(a1), informerAdd(a1)}},
		"stale delete same uid":     {includeAdds: true, steps: []mutationStep{informerAdd(a2), mutate(a3), informerDelete(a1), notifyDelete(a1)}},
		"newer delete other uid":    {includeAdds: true, steps: []mutationStep{informerAdd(a2), mutate(a3), informerDelete(b3), notifyDelete(mutationPod("uid-2", "3"))}},
		"old delete other uid":      {includeAdds: true, steps: []mutationStep{informerAdd(a2), mutate(a3), informerDelete(a1), notifyDelete(mutationPod("uid-other", "1"))}},
		"mutation after its delete": {includeAdds: true, steps: []mutationStep{informerAdd(a1), informerDelete(a2), notifyAddOrUpdate(a2), notifyDelete(a2), mutate(a2)}},
		"mutation after recreate": {includeAdds: true, steps: []mutationStep{informerAdd(a1), informerDelete(a2), informerAdd(b3),
			notifyAddOrUpdate(a2), notifyDelete(a2), notifyAddOrUpdate(b3), mutate(a2)}},
		"unseen add then delete":    {includeAdds: true, steps: []mutationStep{mutate(a2), notifyDelete(a1)}},
		"unseen add without adds":   {steps: []mutationStep{mutate(a2)}},
		"unseen add read twice":     {includeAdds: true, steps: []mutationStep{mutate(a2)}},
		"mutation then informer":    {includeAdds: true, steps: []mutationStep{mutate(a2), informerAdd(a3), notifyAddOrUpdate(a3)}},
		"mutation newer than store": {steps: []mutationStep{informerAdd(a1), mutate(a3)}},
	} {
		t.Run(name, func(t *testing.T) {
			var views [2][]string
			for i, ours := range []bool{false, true} {
				w := newMutationWorld(ours, tc.includeAdds)
				for _, step := range tc.steps {
					step(w)
					views[i] = append(views[i], w.listed())
				}
				views[i] = append(views[i], w.got())
			}
			assert.Equal(t, views[0], views[1])
		})
	}
}

// TestMutationCacheHidesItsTombstones is the one difference the README
// lists for reads: told of a delete before its store caught up, client-go
// hands its internal tombstone out as if it were the object.
func TestMutationCacheHidesItsTombstones(t *testing.T) {
	var views [2][]string
	for i, ours := range []bool{false, true} {
		w := newMutationWorld(ours, false)
		informerAdd(mutationPod("uid-1", "2"))(w)
		notifyDelete(mutationPod("uid-1", "3"))(w)
		views[i] = []string{w.listed(), w.got()}
	}
	assert.Equal(t, []string{"byIndex=[*cache.tombstone] err=<nil>", "get=*cache.tombstone err=<nil>"}, views[0])
	assert.Equal(t, []string{"byIndex=[] err=<nil>", "get=absent err=<nil>"}, views[1])
}

// staleIndexer indexes a key it no longer holds, as an indexer read between
// a delete and its index update would.
type staleIndexer struct {
	Indexer
	ghost string
}

func (s staleIndexer) GetByKey(key string) (interface{}, bool, error) {
	if key == s.ghost {
		return nil, false, nil
	}
	return s.Indexer.GetByKey(key)
}

// A key the indexer lists but holds no object for: client-go v0.37 hides a
// local write for it from ByIndex, v0.38 returns the local write. Ours does
// what the client-go it is built with does.
func TestMutationCacheByIndexKeepsOnlyKeysTheIndexerReturned(t *testing.T) {
	byName := func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Name}, nil }
	run := func(ours bool) []string {
		var indexer Indexer
		if ours {
			indexer = NewIndexer(MetaNamespaceKeyFunc, Indexers{"by-name": byName})
		} else {
			indexer = clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{"by-name": byName})
		}
		ghost := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod", UID: "u1", ResourceVersion: "1"}}
		_ = indexer.Add(ghost)
		stale := staleIndexer{Indexer: indexer, ghost: "ns/pod"}
		var mc mutationReads
		if ours {
			mc = NewIntegerResourceVersionMutationCache(klog.Background(), stale, stale, time.Hour, true)
		} else {
			mc = clientcache.NewIntegerResourceVersionMutationCache(klog.Background(), stale, stale, time.Hour, true)
		}
		local := ghost.DeepCopy()
		local.ResourceVersion = "2"
		mc.Mutation(local)
		items, err := mc.ByIndex("by-name", "pod")
		assert.NoError(t, err)
		var rvs []string
		for _, item := range items {
			rvs = append(rvs, item.(*v1.Pod).ResourceVersion)
		}
		return rvs
	}
	theirs := run(false)
	assert.Equal(t, theirs, run(true))
	if clientGoV038 {
		assert.Equal(t, []string{"2"}, theirs)
	} else {
		assert.Empty(t, theirs)
	}
}
