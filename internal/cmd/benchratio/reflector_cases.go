package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
)

// The reflector cases time one initial sync of 100k pods into a store that
// only keeps what Replace hands it, so the reflector's own work is what is
// compared: through a LIST (time, allocations) and through a watch-list
// stream (time, and the heap the sync needs on top of the objects, which
// both sides share).

const reflectorBenchSize = 100_000

// reflectorBenchPods are the pods in the order an API server streams them:
// by key.
var reflectorBenchPods = sync.OnceValue(func() []*v1.Pod {
	pods := make([]*v1.Pod, reflectorBenchSize)
	for i := range pods {
		pods[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace:       fmt.Sprintf("ns-%02d", i/(reflectorBenchSize/50)),
			Name:            fmt.Sprintf("pod-%06d", i),
			ResourceVersion: "10",
			Labels:          map[string]string{"app": "web"},
		}}
	}
	return pods
})

var reflectorBenchList = sync.OnceValue(func() *v1.PodList {
	l := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	for _, p := range reflectorBenchPods() {
		l.Items = append(l.Items, *p)
	}
	return l
})

// reflectorBenchStore keeps the replaced list and reports the Replace.
type reflectorBenchStore struct {
	items     []interface{}
	replaced  chan struct{}
	onReplace func()
}

func (s *reflectorBenchStore) Add(interface{}) error    { return nil }
func (s *reflectorBenchStore) Update(interface{}) error { return nil }
func (s *reflectorBenchStore) Delete(interface{}) error { return nil }
func (s *reflectorBenchStore) Resync() error            { return nil }
func (s *reflectorBenchStore) Replace(items []interface{}, _ string) error {
	s.items = items
	if s.onReplace != nil {
		s.onReplace()
	}
	close(s.replaced)
	return nil
}

// reflectorBenchLW serves the list, or a watch-list stream of the pods, and
// then a watch that stays open until the reflector stops it.
type reflectorBenchLW struct {
	noWatchList bool
	// beforeEnd runs once the last initial event has been taken.
	beforeEnd func()
}

func (lw *reflectorBenchLW) IsWatchListSemanticsUnSupported() bool { return lw.noWatchList }

func (lw *reflectorBenchLW) List(metav1.ListOptions) (kruntime.Object, error) {
	return reflectorBenchList(), nil
}

func (lw *reflectorBenchLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents == nil {
		return watch.NewFake(), nil
	}
	pods := reflectorBenchPods()
	end := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	if lw.beforeEnd == nil {
		w := watch.NewFakeWithChanSize(len(pods)+1, false)
		for _, p := range pods {
			w.Add(p)
		}
		w.Action(watch.Bookmark, end)
		return w, nil
	}
	w := watch.NewFake()
	go func() {
		for _, p := range pods {
			w.Add(p)
		}
		lw.beforeEnd()
		w.Action(watch.Bookmark, end)
	}()
	return w, nil
}

// reflectorCPUTime is the CPU time this process has used so far. On a
// shared machine it is a steadier measure than wall time, which also counts
// the time spent waiting for a core.
func reflectorCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reflectorReportCPU reports the CPU time per operation since start.
func reflectorReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(reflectorCPUTime()-start)/float64(b.N), "cpu-ns/op")
}

// reflectorBenchRun is one implementation's initial sync: it returns once
// the store got its Replace and the reflector has stopped.
type reflectorBenchRun func(lw clientcache.ListerWatcher, store *reflectorBenchStore)

func oursReflectorRun(lw clientcache.ListerWatcher, store *reflectorBenchStore) {
	r := cache.NewReflector(lw, &v1.Pod{}, store, 0)
	reflectorBenchSync(r.ListAndWatchWithContext, store.replaced)
}

func theirsReflectorRun(lw clientcache.ListerWatcher, store *reflectorBenchStore) {
	r := clientcache.NewReflector(lw, &v1.Pod{}, store, 0)
	reflectorBenchSync(r.ListAndWatchWithContext, store.replaced)
}

// reflectorBenchSync runs law until replaced is closed, then stops it.
func reflectorBenchSync(law func(context.Context) error, replaced <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = law(ctx)
	}()
	<-replaced
	cancel()
	<-done
}

// reflectorIndexerCase is the whole initial sync a user sees: the LIST
// replaced into each implementation's own namespace-indexed Indexer.
func reflectorIndexerCase(newIndexer func() clientcache.Indexer, newReflector func(clientcache.ListerWatcher, clientcache.Indexer) func(context.Context) error) func(b *testing.B) {
	return func(b *testing.B) {
		lw := &reflectorBenchLW{noWatchList: true}
		reflectorBenchList()
		b.ReportAllocs()
		runtime.GC()
		b.ResetTimer()
		cpu := reflectorCPUTime()
		defer func() { reflectorReportCPU(b, cpu) }()
		for i := 0; i < b.N; i++ {
			idx := newIndexer()
			store := &reflectorBenchIndexer{Indexer: idx, replaced: make(chan struct{})}
			reflectorBenchSync(newReflector(lw, store), store.replaced)
		}
	}
}

// reflectorBenchIndexer reports the Replace of the Indexer it wraps.
type reflectorBenchIndexer struct {
	clientcache.Indexer
	replaced chan struct{}
}

func (s *reflectorBenchIndexer) Replace(items []interface{}, rv string) error {
	err := s.Indexer.Replace(items, rv)
	close(s.replaced)
	return err
}

func reflectorListCase(run reflectorBenchRun) func(b *testing.B) {
	return func(b *testing.B) {
		lw := &reflectorBenchLW{noWatchList: true}
		reflectorBenchList()
		b.ReportAllocs()
		runtime.GC()
		b.ResetTimer()
		cpu := reflectorCPUTime()
		for i := 0; i < b.N; i++ {
			run(lw, &reflectorBenchStore{replaced: make(chan struct{})})
		}
		reflectorReportCPU(b, cpu)
	}
}

func reflectorWatchListCase(run reflectorBenchRun) func(b *testing.B) {
	return func(b *testing.B) {
		reflectorBenchPods()
		peak := reflectorPeakSyncHeap(run)
		lw := &reflectorBenchLW{}
		b.ReportAllocs()
		runtime.GC()
		b.ResetTimer()
		cpu := reflectorCPUTime()
		for i := 0; i < b.N; i++ {
			run(lw, &reflectorBenchStore{replaced: make(chan struct{})})
		}
		reflectorReportCPU(b, cpu)
		b.ReportMetric(peak/(1<<20), "peak-extra-MB")
	}
}

// reflectorPeakSyncHeap measures the live heap a watch-list sync holds
// beyond the objects themselves: once when every initial object has been
// taken (the reflector's buffer is full) and once inside Replace, each
// after a full GC. The larger of the two is returned.
func reflectorPeakSyncHeap(run reflectorBenchRun) float64 {
	live := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := live()
	var peak uint64
	sample := func() { peak = max(peak, live()) }
	store := &reflectorBenchStore{replaced: make(chan struct{}), onReplace: sample}
	run(&reflectorBenchLW{beforeEnd: sample}, store)
	runtime.KeepAlive(store.items)
	if peak < base {
		return 0
	}
	return float64(peak - base)
}

// reflectorEventsLW serves an empty list, then one watch that delivers the
// prepared events and stays open.
type reflectorEventsLW struct{ w *watch.FakeWatcher }

func (lw *reflectorEventsLW) IsWatchListSemanticsUnSupported() bool { return true }

func (lw *reflectorEventsLW) List(metav1.ListOptions) (kruntime.Object, error) {
	return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

func (lw *reflectorEventsLW) Watch(metav1.ListOptions) (watch.Interface, error) { return lw.w, nil }

// reflectorCountingStore signals once it has seen n updates.
type reflectorCountingStore struct {
	reflectorBenchStore
	n, seen int
	done    chan struct{}
}

func (s *reflectorCountingStore) Replace([]interface{}, string) error { return nil }

func (s *reflectorCountingStore) Update(interface{}) error {
	if s.seen++; s.seen == s.n {
		close(s.done)
	}
	return nil
}

// reflectorEventsCase times 100k watch events applied to a store.
func reflectorEventsCase(newLAW func(clientcache.ListerWatcher, clientcache.ReflectorStore) func(context.Context) error) func(b *testing.B) {
	return func(b *testing.B) {
		pods := reflectorBenchPods()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			w := watch.NewFakeWithChanSize(len(pods), false)
			for _, p := range pods {
				w.Modify(p)
			}
			store := &reflectorCountingStore{n: len(pods), done: make(chan struct{})}
			law := newLAW(&reflectorEventsLW{w: w}, store)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			b.StartTimer()
			go func() {
				defer close(done)
				_ = law(ctx)
			}()
			<-store.done
			cancel()
			<-done
		}
	}
}

func init() {
	register(
		benchCase{Name: "Reflector/InitialList100k", Ours: reflectorListCase(oursReflectorRun), Theirs: reflectorListCase(theirsReflectorRun)},
		benchCase{Name: "Reflector/InitialList100kIntoIndexer",
			Ours: reflectorIndexerCase(func() clientcache.Indexer {
				return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			}, func(lw clientcache.ListerWatcher, s clientcache.Indexer) func(context.Context) error {
				return cache.NewReflector(lw, &v1.Pod{}, s, 0).ListAndWatchWithContext
			}),
			Theirs: reflectorIndexerCase(func() clientcache.Indexer {
				return clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
			}, func(lw clientcache.ListerWatcher, s clientcache.Indexer) func(context.Context) error {
				return clientcache.NewReflector(lw, &v1.Pod{}, s, 0).ListAndWatchWithContext
			}),
		},
		benchCase{Name: "Reflector/WatchEvents100k",
			Ours: reflectorEventsCase(func(lw clientcache.ListerWatcher, s clientcache.ReflectorStore) func(context.Context) error {
				return cache.NewReflector(lw, &v1.Pod{}, s, 0).ListAndWatchWithContext
			}),
			Theirs: reflectorEventsCase(func(lw clientcache.ListerWatcher, s clientcache.ReflectorStore) func(context.Context) error {
				return clientcache.NewReflector(lw, &v1.Pod{}, s, 0).ListAndWatchWithContext
			}),
		},
		benchCase{Name: "Reflector/WatchList100k", Ours: reflectorWatchListCase(oursReflectorRun), Theirs: reflectorWatchListCase(theirsReflectorRun)},
	)
}
