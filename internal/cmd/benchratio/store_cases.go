package main

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
)

// The store cases compare Add, index-changing Update, ByIndex, List and
// GetByKey on 100k objects, and a writer's throughput while readers List in
// a loop.

const (
	storeBenchSize       = 100_000
	storeBenchNamespaces = 100
	storeContendedSize   = 10_000
	storeContendedWindow = 300 * time.Millisecond
)

// storeBenchPod is pod i; variant picks the value of its "app" label, so
// alternating variants is an index-changing update.
func storeBenchPod(i, variant int) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:       "ns-" + strconv.Itoa(i%storeBenchNamespaces),
		Name:            "pod-" + strconv.Itoa(i),
		ResourceVersion: strconv.Itoa(i),
		Labels:          map[string]string{"app": "app-" + strconv.Itoa((i+variant)%50)},
	}}
}

var storeBenchPods = sync.OnceValue(func() [2][]interface{} {
	var out [2][]interface{}
	for v := range out {
		out[v] = make([]interface{}, storeBenchSize)
		for i := range out[v] {
			out[v][i] = storeBenchPod(i, v)
		}
	}
	return out
})

func storeBenchAppIndex(obj interface{}) ([]string, error) {
	return []string{obj.(*v1.Pod).Labels["app"]}, nil
}

// storeBenchImpl builds an indexer of one implementation.
type storeBenchImpl func(indexers map[string]clientcache.IndexFunc) clientcache.Indexer

func oursStoreImpl(indexers map[string]clientcache.IndexFunc) clientcache.Indexer {
	return cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
}

func theirsStoreImpl(indexers map[string]clientcache.IndexFunc) clientcache.Indexer {
	return clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, indexers)
}

func storeBenchIndexers() map[string]clientcache.IndexFunc {
	return map[string]clientcache.IndexFunc{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"app":                storeBenchAppIndex,
	}
}

func filledStore(impl storeBenchImpl, n int) clientcache.Indexer {
	s := impl(storeBenchIndexers())
	for _, p := range storeBenchPods()[0][:n] {
		if err := s.Add(p); err != nil {
			panic(err)
		}
	}
	return s
}

// benchStoreAdd builds a 100k-object indexer with Add, per op.
func benchStoreAdd(impl storeBenchImpl) func(b *testing.B) {
	return func(b *testing.B) {
		pods := storeBenchPods()[0]
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			s := impl(storeBenchIndexers())
			for _, p := range pods {
				if err := s.Add(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// benchStoreUpdate updates one object per op, moving it to another "app"
// index value each time.
func benchStoreUpdate(impl storeBenchImpl) func(b *testing.B) {
	return func(b *testing.B) {
		pods := storeBenchPods()
		s := filledStore(impl, storeBenchSize)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if err := s.Update(pods[1-(i/storeBenchSize)%2][i%storeBenchSize]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchStoreByIndex reads one namespace (1000 objects) per op.
func benchStoreByIndex(impl storeBenchImpl) func(b *testing.B) {
	return func(b *testing.B) {
		s := filledStore(impl, storeBenchSize)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			objs, err := s.ByIndex(cache.NamespaceIndex, "ns-"+strconv.Itoa(i%storeBenchNamespaces))
			if err != nil || len(objs) != storeBenchSize/storeBenchNamespaces {
				b.Fatal(len(objs), err)
			}
		}
	}
}

// benchStoreList lists all 100k objects per op.
func benchStoreList(impl storeBenchImpl) func(b *testing.B) {
	return func(b *testing.B) {
		s := filledStore(impl, storeBenchSize)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if len(s.List()) != storeBenchSize {
				b.Fatal("short list")
			}
		}
	}
}

// benchStoreGet reads one object by key per op.
func benchStoreGet(impl storeBenchImpl) func(b *testing.B) {
	return func(b *testing.B) {
		s := filledStore(impl, storeBenchSize)
		keys := s.ListKeys()
		runtime.GC()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, ok, _ := s.GetByKey(keys[(i*7919)%len(keys)]); !ok {
				b.Fatal("missing")
			}
		}
	}
}

// benchStoreGetThenUpdate does, per op, what an informer does for each
// update event: Get the object's current version, then Update it.
func benchStoreGetThenUpdate(impl storeBenchImpl) func(b *testing.B) {
	return func(b *testing.B) {
		pods := storeBenchPods()
		s := filledStore(impl, storeBenchSize)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			p := pods[1-(i/storeBenchSize)%2][(i*7919)%storeBenchSize]
			if _, ok, err := s.Get(p); !ok || err != nil {
				b.Fatal("missing", err)
			}
			if err := s.Update(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchStoreContended runs, per op, one writer updating a store of size
// objects for a fixed window while readers call List in a loop, and
// reports the writer's throughput.
func benchStoreContended(impl storeBenchImpl, size, readers int) func(b *testing.B) {
	return func(b *testing.B) {
		pods := storeBenchPods()
		s := filledStore(impl, size)
		var writes int64
		var elapsed time.Duration
		b.ResetTimer()
		for range b.N {
			var stop atomic.Bool
			var wg sync.WaitGroup
			for range readers {
				wg.Go(func() {
					for !stop.Load() {
						_ = s.List()
					}
				})
			}
			start := time.Now()
			for i := 0; time.Since(start) < storeContendedWindow; i++ {
				if err := s.Update(pods[1-(i/size)%2][i%size]); err != nil {
					b.Fatal(err)
				}
				writes++
			}
			elapsed += time.Since(start)
			stop.Store(true)
			wg.Wait()
		}
		b.ReportMetric(float64(writes)/elapsed.Seconds(), "writes/s")
	}
}

func init() {
	register(
		benchCase{"Store/Add-100k", benchStoreAdd(oursStoreImpl), benchStoreAdd(theirsStoreImpl)},
		benchCase{"Store/UpdateIndexChanging-100k", benchStoreUpdate(oursStoreImpl), benchStoreUpdate(theirsStoreImpl)},
		benchCase{"Store/ByIndex-100k", benchStoreByIndex(oursStoreImpl), benchStoreByIndex(theirsStoreImpl)},
		benchCase{"Store/List-100k", benchStoreList(oursStoreImpl), benchStoreList(theirsStoreImpl)},
		benchCase{"Store/GetByKey-100k", benchStoreGet(oursStoreImpl), benchStoreGet(theirsStoreImpl)},
		benchCase{"Store/GetThenUpdate-100k", benchStoreGetThenUpdate(oursStoreImpl), benchStoreGetThenUpdate(theirsStoreImpl)},
		benchCase{"Store/WriteWhileListing-100k-10readers",
			benchStoreContended(oursStoreImpl, storeBenchSize, 10), benchStoreContended(theirsStoreImpl, storeBenchSize, 10)},
	)
	for _, r := range []int{0, 1, 10} {
		register(benchCase{
			Name:   "Store/WriteWhileListing-10k-" + strconv.Itoa(r) + "readers",
			Ours:   benchStoreContended(oursStoreImpl, storeContendedSize, r),
			Theirs: benchStoreContended(theirsStoreImpl, storeContendedSize, r),
		})
	}
}
