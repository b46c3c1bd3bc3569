package main

import (
	"strconv"
	"testing"
	"time"

	ours "github.com/openinformer/cache"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	theirs "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The MutationCache cases use client-go's Indexer as the backing store on
// both sides, so only the mutation cache itself is compared.
func init() {
	register(
		benchCase{"Extras/MutationCache/GetByKeyOverlay", extrasMutationGet(ours.NewIntegerResourceVersionMutationCache), extrasMutationGet(theirs.NewIntegerResourceVersionMutationCache)},
		benchCase{"Extras/MutationCache/Mutation", extrasMutationWrite(ours.NewIntegerResourceVersionMutationCache), extrasMutationWrite(theirs.NewIntegerResourceVersionMutationCache)},
		benchCase{"Extras/MutationCache/ByIndexIncludeAdds", extrasMutationByIndex(ours.NewIntegerResourceVersionMutationCache), extrasMutationByIndex(theirs.NewIntegerResourceVersionMutationCache)},
		benchCase{"Extras/TypedHandler/Dispatch", extrasTypedDispatch(extrasOursTyped), extrasTypedDispatch(extrasTheirsTyped)},
		benchCase{"Extras/TTLStore/AddGet", extrasTTLAddGet(ours.NewTTLStore), extrasTTLAddGet(theirs.NewTTLStore)},
		benchCase{"Extras/TTLStore/List1000", extrasTTLList(ours.NewTTLStore), extrasTTLList(theirs.NewTTLStore)},
		benchCase{"Extras/UndeltaStore/Update100", extrasUndelta(ours.NewUndeltaStore), extrasUndelta(theirs.NewUndeltaStore)},
	)
}

// extrasMutationCache is what the benchmarks need of either MutationCache.
type extrasMutationCache interface {
	GetByKey(key string) (interface{}, bool, error)
	ByIndex(indexName, indexKey string) ([]interface{}, error)
	Mutation(interface{})
}

// extrasMutationCtor adapts both constructors, whose result types differ.
func extrasMutationCtor[M extrasMutationCache](ctor func(klog.Logger, theirs.Store, theirs.Indexer, time.Duration, bool) M) func(theirs.Indexer) extrasMutationCache {
	return func(idx theirs.Indexer) extrasMutationCache {
		return ctor(klog.Background(), idx, idx, time.Hour, true)
	}
}

func extrasPod(i int, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p" + strconv.Itoa(i), ResourceVersion: rv}}
}

// extrasMutationFixture: 1000 pods in the backing indexer at rv 1, the
// first 100 overlaid by local writes at rv 2.
func extrasMutationFixture(newCache func(theirs.Indexer) extrasMutationCache) (extrasMutationCache, []string) {
	idx := theirs.NewIndexer(theirs.MetaNamespaceKeyFunc, theirs.Indexers{theirs.NamespaceIndex: theirs.MetaNamespaceIndexFunc})
	c := newCache(idx)
	keys := make([]string, 1000)
	for i := range keys {
		_ = idx.Add(extrasPod(i, "1"))
		keys[i] = "ns/p" + strconv.Itoa(i)
		if i < 100 {
			c.Mutation(extrasPod(i, "2"))
		}
	}
	return c, keys
}

func extrasMutationGet[M extrasMutationCache](ctor func(klog.Logger, theirs.Store, theirs.Indexer, time.Duration, bool) M) func(*testing.B) {
	return func(b *testing.B) {
		c, keys := extrasMutationFixture(extrasMutationCtor(ctor))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, ok, _ := c.GetByKey(keys[i%200]); !ok {
				b.Fatal("missing")
			}
		}
	}
}

func extrasMutationWrite[M extrasMutationCache](ctor func(klog.Logger, theirs.Store, theirs.Indexer, time.Duration, bool) M) func(*testing.B) {
	return func(b *testing.B) {
		c, _ := extrasMutationFixture(extrasMutationCtor(ctor))
		pods := make([]*v1.Pod, 1000)
		for i := range pods {
			pods[i] = extrasPod(i, "3")
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			c.Mutation(pods[i%len(pods)])
		}
	}
}

func extrasMutationByIndex[M extrasMutationCache](ctor func(klog.Logger, theirs.Store, theirs.Indexer, time.Duration, bool) M) func(*testing.B) {
	return func(b *testing.B) {
		idx := theirs.NewIndexer(theirs.MetaNamespaceKeyFunc, theirs.Indexers{theirs.NamespaceIndex: theirs.MetaNamespaceIndexFunc})
		c := extrasMutationCtor(ctor)(idx)
		for i := 0; i < 100; i++ {
			_ = idx.Add(extrasPod(i, "1"))
			c.Mutation(extrasPod(i+50, "2"))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if items, _ := c.ByIndex(theirs.NamespaceIndex, "ns"); len(items) != 150 {
				b.Fatalf("got %d items", len(items))
			}
		}
	}
}

// extrasCaptureInformer records the untyped handler a typed wrapper registers.
type extrasCaptureInformer struct {
	theirs.SharedIndexInformer
	handler theirs.ResourceEventHandler
}

func (c *extrasCaptureInformer) AddEventHandlerWithOptions(h theirs.ResourceEventHandler, _ theirs.HandlerOptions) (theirs.ResourceEventHandlerRegistration, error) {
	c.handler = h
	return nil, nil
}

func extrasOursTyped(c *extrasCaptureInformer, h theirs.TypedResourceEventHandler[*v1.Pod]) {
	_, _ = ours.NewTypedSharedIndexInformer[*v1.Pod](c).AddTypedEventHandler(h)
}

func extrasTheirsTyped(c *extrasCaptureInformer, h theirs.TypedResourceEventHandler[*v1.Pod]) {
	_, _ = theirs.NewTypedSharedIndexInformer[*v1.Pod](c).AddTypedEventHandler(h)
}

// extrasTypedDispatch measures one add, one update and one delete through
// the typed handler wrapper.
func extrasTypedDispatch(register func(*extrasCaptureInformer, theirs.TypedResourceEventHandler[*v1.Pod])) func(*testing.B) {
	return func(b *testing.B) {
		var n int
		c := &extrasCaptureInformer{}
		register(c, theirs.TypedResourceEventHandlerFuncs[*v1.Pod]{
			AddFunc:    func(*v1.Pod) { n++ },
			UpdateFunc: func(_, _ *v1.Pod) { n++ },
			DeleteFunc: func(theirs.DeletedObject[*v1.Pod]) { n++ },
		})
		pod := extrasPod(1, "1")
		tomb := theirs.DeletedFinalStateUnknown{Key: "ns/p1", Obj: pod}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			c.handler.OnAdd(pod, false)
			c.handler.OnUpdate(pod, pod)
			c.handler.OnDelete(tomb)
		}
		if n != 3*b.N {
			b.Fatalf("handled %d events", n)
		}
	}
}

// extrasTTLAddGet refreshes and reads back one of 1000 entries per op.
func extrasTTLAddGet(newStore func(theirs.KeyFunc, time.Duration) theirs.Store) func(*testing.B) {
	return func(b *testing.B) {
		s := newStore(theirs.MetaNamespaceKeyFunc, time.Hour)
		pods := make([]*v1.Pod, 1000)
		for i := range pods {
			pods[i] = extrasPod(i, "1")
			_ = s.Add(pods[i])
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p := pods[i%len(pods)]
			_ = s.Add(p)
			if _, ok, _ := s.Get(p); !ok {
				b.Fatal("missing")
			}
		}
	}
}

// extrasTTLList lists 1000 live entries, checking each for expiry.
func extrasTTLList(newStore func(theirs.KeyFunc, time.Duration) theirs.Store) func(*testing.B) {
	return func(b *testing.B) {
		s := newStore(theirs.MetaNamespaceKeyFunc, time.Hour)
		for i := 0; i < 1000; i++ {
			_ = s.Add(extrasPod(i, "1"))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if len(s.List()) != 1000 {
				b.Fatal("short list")
			}
		}
	}
}

// extrasUndelta updates one of 100 objects per op, pushing the full list.
func extrasUndelta[U theirs.Store](newStore func(func([]interface{}), theirs.KeyFunc) U) func(*testing.B) {
	return func(b *testing.B) {
		var pushed int
		s := newStore(func(list []interface{}) { pushed += len(list) }, theirs.MetaNamespaceKeyFunc)
		pods := make([]*v1.Pod, 100)
		for i := range pods {
			pods[i] = extrasPod(i, "1")
			_ = s.Add(pods[i])
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_ = s.Update(pods[i%len(pods)])
		}
		if pushed < b.N*100 {
			b.Fatal("missing pushes")
		}
	}
}
