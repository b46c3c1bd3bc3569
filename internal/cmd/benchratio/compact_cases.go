package main

import (
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	oi "github.com/openinformer/cache"
	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/fixtures"
)

// The compact cases put compact storage beside what it replaces, on
// realistic pods (internal/fixtures, ~23 KB each decoded): the "ours" column
// is compact storage, the "client-go" column client-go's Indexer read the
// way controller-runtime reads it (ByIndex or GetByKey, then a DeepCopy of
// each object), except for the events cases, whose reference is our
// default informer. Cold reads use a compact store without a hot cache, so every
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

// coldIndexer is a compact store without hot cache: every read decodes.
func coldIndexer() clientcache.Indexer { return compactIndexer(-1) }

func clientGoIndexer() clientcache.Indexer {
	return compactFilled(clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, namespaceIndexers()))
}

func init() {
	register(
		benchCase{Name: "compact/GetByKey-cold-pod",
			Ours:   benchGetByKey(coldIndexer, false, false),
			Theirs: benchGetByKey(clientGoIndexer, true, false)},
		benchCase{Name: "compact/GetByKey-cold-pod-gc-off",
			Ours:   benchGetByKey(coldIndexer, false, true),
			Theirs: benchGetByKey(clientGoIndexer, true, true)},
		benchCase{Name: "compact/thread-clock-calibration", Ours: benchFixedWork, Theirs: benchFixedWork},
		benchCase{Name: "compact/ByIndex-1000-pods-cold",
			Ours:   benchNamespaceRead(coldIndexer, false),
			Theirs: benchNamespaceRead(clientGoIndexer, true)},
		benchCase{Name: "compact/ByIndex-1000-pods-hot",
			Ours:   benchNamespaceRead(func() clientcache.Indexer { return compactIndexer(oi.DefaultHotObjects) }, true),
			Theirs: benchNamespaceRead(clientGoIndexer, true)},
		benchCase{Name: "compact/events-4-handlers-vs-our-default",
			Ours:   func(b *testing.B) { benchInformerEvents(b, compactInformer) },
			Theirs: func(b *testing.B) { benchInformerEvents(b, oursInformer) }},
		benchCase{Name: "compact/events-4-handlers-hot-churn-vs-our-default",
			Ours:   func(b *testing.B) { benchInformerEventsOver(b, compactInformer, hotChurnKeys) },
			Theirs: func(b *testing.B) { benchInformerEventsOver(b, oursInformer, hotChurnKeys) }},
		benchCase{Name: "compact/events-floor-encode+decode-vs-our-default-event",
			Ours:   func(b *testing.B) { benchEventFloor(b, benchEventPods, true) },
			Theirs: func(b *testing.B) { benchInformerEvents(b, oursInformer) }},
		benchCase{Name: "compact/events-floor-encode-vs-our-default-hot-churn-event",
			Ours:   func(b *testing.B) { benchEventFloor(b, hotChurnKeys, false) },
			Theirs: func(b *testing.B) { benchInformerEventsOver(b, oursInformer, hotChurnKeys) }},
	)
}

// hotChurnKeys is how many pods the hot-churn events case updates, over
// and over, as status churn does: half of the 1000 objects the hot cache
// keeps by default, so that every update finds its old object there
// instead of decoding it.
const hotChurnKeys = 500

// benchEventFloor is the work compact storage cannot skip for an update:
// one op encodes the new version of a pod and, with decode, decodes the old
// version's encoding, as an update whose old object is cold must (every
// update of the events case); without, the old object comes from the hot
// cache (the hot-churn case). It cycles over the first keys pods with the
// same versions as the events cases, with the codec compact storage uses.
// Its ns/op and cpu-µs/event set beside our default's whole cost per event
// bound the matching events case's ratio: default / (default + floor).
func benchEventFloor(b *testing.B, keys int, decode bool) {
	pods := benchPods()
	codec, err := compact.NewCodec(&v1.Pod{}, compact.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var encoded [2][]compact.Encoding
	for v := range encoded {
		encoded[v] = make([]compact.Encoding, keys)
		for i, p := range pods[v][:keys] {
			if encoded[v][i], err = codec.Encode(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPUPerOp(b)
	for i := range b.N {
		v := (i/keys + 1) % 2
		if _, err := codec.Encode(pods[v][i%keys]); err != nil {
			b.Fatal(err)
		}
		if !decode {
			continue
		}
		if _, err := codec.Decode(encoded[1-v][i%keys]); err != nil {
			b.Fatal(err)
		}
	}
	cpu("cpu-µs/event")
}

// compactInformer is our informer with compact storage and the default hot
// cache.
var compactInformer = informerImpl{
	newInformer: func(lw clientcache.ListerWatcher, obj apiruntime.Object, resync time.Duration, indexers clientcache.Indexers) clientcache.SharedIndexInformer {
		return oi.NewSharedIndexInformerWithOptions(lw, obj, oi.SharedIndexInformerOptions{
			ResyncPeriod: resync, Indexers: indexers, Compact: &oi.CompactOptions{HotObjects: oi.DefaultHotObjects}})
	},
	shutDown: oi.ShutDownEventHandler,
}

// benchGetByKey reads one pod by key per op, in a random order, deep
// copying it when copied, and reports percentiles of one read: wall-clock
// ("p99-µs") and the CPU time of the reading thread ("-cpu-µs"), which a
// busy machine's scheduling does not inflate. The goroutine is locked to
// its thread so that the thread's clock is the read's. With gcOff the
// collector runs only between batches of reads, outside the timed part, so
// the CPU figures are the read alone; otherwise they include the GC assist
// a read pays for what it allocates. The thread's system time and page
// faults per read tell how much of its CPU time is the kernel handing it
// memory.
func benchGetByKey(newIndexer func() clientcache.Indexer, copied, gcOff bool) func(b *testing.B) {
	return func(b *testing.B) {
		idx := newIndexer()
		keys := idx.ListKeys()
		rng := rand.New(rand.NewPCG(1, 2))
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if gcOff {
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
		}
		wall, cpu := make([]time.Duration, b.N), make([]time.Duration, b.N)
		clock := true
		b.ReportAllocs()
		b.ResetTimer()
		sys0, faults0, usage := threadUsage()
		for i := range b.N {
			if gcOff && i%readsPerGC == readsPerGC-1 {
				b.StopTimer()
				runtime.GC()
				b.StartTimer()
			}
			start := time.Now()
			startCPU, ok := threadCPU()
			obj, found, err := idx.GetByKey(keys[rng.IntN(len(keys))])
			if !found || err != nil {
				b.Fatal(found, err)
			}
			if copied {
				runtime.KeepAlive(obj.(*v1.Pod).DeepCopy())
			}
			endCPU, _ := threadCPU()
			wall[i], cpu[i], clock = time.Since(start), endCPU-startCPU, clock && ok
		}
		sys1, faults1, _ := threadUsage()
		b.StopTimer()
		b.ReportMetric(percentile(wall, 0.99), "p99-µs")
		if clock {
			reportCPUPercentiles(b, cpu)
		}
		if usage {
			b.ReportMetric(float64(sys1-sys0)/float64(time.Microsecond)/float64(b.N), "sys-µs/op")
			b.ReportMetric(float64(faults1-faults0)/float64(b.N), "faults/op")
		}
	}
}

// benchFixedWork times a fixed computation of a few tens of microseconds,
// allocating nothing, the way benchGetByKey times a read. Both sides run
// the same code: their percentiles show how much the thread clock itself
// varies on the machine at the time, the floor under any other case's
// p99-cpu/p50-cpu.
func benchFixedWork(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range b.N {
		start, _ := threadCPU()
		x := uint64(i)
		for range 20_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		end, ok := threadCPU()
		if !ok {
			b.Skip("no thread clock")
		}
		cpu[i] = end - start
		runtime.KeepAlive(x)
	}
	b.StopTimer()
	reportCPUPercentiles(b, cpu)
}

// reportCPUPercentiles reports the 50th, 99th and 99.9th percentiles of
// cpu, in microseconds.
func reportCPUPercentiles(b *testing.B, cpu []time.Duration) {
	for _, p := range []struct {
		name string
		q    float64
	}{{"p50-cpu-µs", 0.50}, {"p99-cpu-µs", 0.99}, {"p999-cpu-µs", 0.999}} {
		b.ReportMetric(percentile(cpu, p.q), p.name)
	}
}

// readsPerGC is how many reads run between collections with the GC off:
// few enough that the heap stays small and the reads reuse its pages
// instead of faulting in fresh ones.
const readsPerGC = 1000

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
