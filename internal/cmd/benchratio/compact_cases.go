package main

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	oi "github.com/openinformer/cache"
	"github.com/openinformer/cache/internal/fixtures"
)

// The compact cases put compact storage beside what it replaces, on
// realistic pods (internal/fixtures, ~23 KB each decoded): the "ours" column
// is compact storage, the "client-go" column client-go's Indexer read the
// way controller-runtime reads it (ByIndex or GetByKey, then a DeepCopy of
// each object), except for the events case, whose reference is our default
// informer. Cold reads use a compact store without a hot cache, so every
// read decodes; hot reads use the default hot cache, already warm, plus
// the DeepCopy controller-runtime makes.

const compactNamespacePods = 1000

// compactPods are compactNamespacePods realistic pods moved into one
// namespace, built once.
var compactPods = sync.OnceValue(func() []*v1.Pod {
	pods := fixtures.Pods(17, compactNamespacePods)
	for _, p := range pods {
		p.Namespace = "busy"
	}
	return pods
})

func compactFilled(idx clientcache.Indexer) clientcache.Indexer {
	for _, p := range compactPods() {
		if err := idx.Add(p); err != nil {
			panic(err)
		}
	}
	return idx
}

func namespaceIndexers() clientcache.Indexers {
	return clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc}
}

func compactIndexer(hot int) clientcache.Indexer {
	return compactFilled(oi.NewCompactIndexer(oi.MetaNamespaceKeyFunc, namespaceIndexers(), oi.CompactOptions{HotObjects: hot}))
}

func clientGoIndexer() clientcache.Indexer {
	return compactFilled(clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, namespaceIndexers()))
}

func init() {
	register(
		benchCase{Name: "compact/GetByKey-cold-pod",
			Ours:   benchGetByKey(func() clientcache.Indexer { return compactIndexer(-1) }, false),
			Theirs: benchGetByKey(clientGoIndexer, true)},
		benchCase{Name: "compact/ByIndex-1000-pods-cold",
			Ours:   benchNamespaceRead(func() clientcache.Indexer { return compactIndexer(-1) }, false),
			Theirs: benchNamespaceRead(clientGoIndexer, true)},
		benchCase{Name: "compact/ByIndex-1000-pods-hot",
			Ours:   benchNamespaceRead(func() clientcache.Indexer { return compactIndexer(0) }, true),
			Theirs: benchNamespaceRead(clientGoIndexer, true)},
		benchCase{Name: "compact/events-4-handlers-vs-our-default",
			Ours:   func(b *testing.B) { benchInformerEvents(b, compactInformer) },
			Theirs: func(b *testing.B) { benchInformerEvents(b, oursInformer) }},
	)
}

// compactInformer is our informer with compact storage and the default hot
// cache.
var compactInformer = informerImpl{
	newInformer: func(lw clientcache.ListerWatcher, obj apiruntime.Object, resync time.Duration, indexers clientcache.Indexers) clientcache.SharedIndexInformer {
		return oi.NewSharedIndexInformerWithOptions(lw, obj, oi.SharedIndexInformerOptions{
			ResyncPeriod: resync, Indexers: indexers, Compact: &oi.CompactOptions{}})
	},
	shutDown: oi.ShutDownEventHandler,
}

// benchGetByKey reads one pod by key per op, in a random order, deep
// copying it when copied, and reports the 99th percentile of one read.
func benchGetByKey(newIndexer func() clientcache.Indexer, copied bool) func(b *testing.B) {
	return func(b *testing.B) {
		idx := newIndexer()
		keys := idx.ListKeys()
		rng := rand.New(rand.NewPCG(1, 2))
		took := make([]time.Duration, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			start := time.Now()
			obj, ok, err := idx.GetByKey(keys[rng.IntN(len(keys))])
			if !ok || err != nil {
				b.Fatal(ok, err)
			}
			if copied {
				runtime.KeepAlive(obj.(*v1.Pod).DeepCopy())
			}
			took[i] = time.Since(start)
		}
		b.StopTimer()
		b.ReportMetric(percentile(took, 0.99), "p99-µs")
	}
}

// benchNamespaceRead reads the 1000-pod namespace per op, deep copying
// each pod when copied.
func benchNamespaceRead(newIndexer func() clientcache.Indexer, copied bool) func(b *testing.B) {
	return func(b *testing.B) {
		idx := newIndexer()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			objs, err := idx.ByIndex(clientcache.NamespaceIndex, "busy")
			if err != nil || len(objs) != compactNamespacePods {
				b.Fatal(len(objs), err)
			}
			if copied {
				for i, o := range objs {
					objs[i] = o.(*v1.Pod).DeepCopy()
				}
			}
		}
	}
}

// percentile is the p-th quantile of took, in microseconds.
func percentile(took []time.Duration, p float64) float64 {
	slices.Sort(took)
	return float64(took[int(p*float64(len(took)-1))]) / float64(time.Microsecond)
}
