package main

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	oi "github.com/openinformer/cache"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"
)

// informerImpl is one shared informer implementation under comparison.
type informerImpl struct {
	newInformer func(clientcache.ListerWatcher, apiruntime.Object, time.Duration, clientcache.Indexers) clientcache.SharedIndexInformer
	shutDown    func(clientcache.SharedInformer, clientcache.ResourceEventHandlerRegistration) error
}

var (
	oursInformer   = informerImpl{oi.NewSharedIndexInformer, oi.ShutDownEventHandler}
	theirsInformer = informerImpl{clientcache.NewSharedIndexInformer, clientcache.ShutDownEventHandler}
)

func init() {
	register(
		benchCase{Name: "informer/events-4-handlers-after-50k-sync",
			Ours: func(b *testing.B) { benchInformerEvents(b, oursInformer) }, Theirs: func(b *testing.B) { benchInformerEvents(b, theirsInformer) }},
		disturbedCase("informer/fast-handlers-beside-1ms-handler", slowPenalty),
		disturbedCase("informer/fast-handlers-beside-blocked-handler", blockPenalty),
		disturbedCase("informer/fast-handlers-beside-1ms-sleeper", sleeperPenalty),
		disturbedCase("informer/1ms-handler-over-1ms-sleeper", slowOverSleeper),
		benchCase{Name: "informer/initial-sync-100k-list",
			Ours: func(b *testing.B) { benchInformerInitialSync(b, oursInformer) }, Theirs: func(b *testing.B) { benchInformerInitialSync(b, theirsInformer) }},
		benchCase{Name: "informer/late-handler-synced-after-100k-sync",
			Ours: func(b *testing.B) { benchInformerLateHandler(b, oursInformer) }, Theirs: func(b *testing.B) { benchInformerLateHandler(b, theirsInformer) }},
	)
}

// benchPodVersions holds two versions of every pod key, built once and
// shared read-only by all runs, so object construction is not measured.
var benchPodVersions = struct {
	once sync.Once
	pods [2][]*v1.Pod
}{}

const benchMaxPods = 100000

func benchPods() [2][]*v1.Pod {
	benchPodVersions.once.Do(func() {
		for v := range benchPodVersions.pods {
			pods := make([]*v1.Pod, benchMaxPods)
			for i := range pods {
				pods[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{
					Namespace: "ns-" + strconv.Itoa(i%100), Name: "pod-" + strconv.Itoa(i),
					ResourceVersion: strconv.Itoa(v + 2), Labels: map[string]string{"app": strconv.Itoa(i % 10)},
				}}
			}
			benchPodVersions.pods[v] = pods
		}
	})
	return benchPodVersions.pods
}

// benchLW lists n pods at RV 1 and then serves whatever the benchmark sends
// on events. It opts out of watch-list, so both informers LIST.
type benchLW struct {
	n      int
	events chan watch.Event
}

func (lw *benchLW) List(metav1.ListOptions) (apiruntime.Object, error) {
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: make([]v1.Pod, lw.n)}
	for i, p := range benchPods()[0][:lw.n] {
		list.Items[i] = *p
	}
	return list, nil
}

func (lw *benchLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	return benchWatch{lw.events}, nil
}

func (lw *benchLW) IsWatchListSemanticsUnSupported() bool { return true }

type benchWatch struct{ ch chan watch.Event }

func (benchWatch) Stop()                            {}
func (w benchWatch) ResultChan() <-chan watch.Event { return w.ch }

// benchCounter is a handler counting calls and signalling when a target
// is reached.
type benchCounter struct {
	n      atomic.Int64
	target atomic.Int64
	done   chan struct{}
	// delay is how long every OnUpdate sleeps.
	delay time.Duration
}

func newBenchCounter() *benchCounter { return &benchCounter{done: make(chan struct{}, 1)} }

func (c *benchCounter) hit() {
	if c.n.Add(1) == c.target.Load() {
		c.done <- struct{}{}
	}
}

func (c *benchCounter) expect(n int64) {
	c.n.Store(0)
	c.target.Store(n)
}

func (c *benchCounter) OnAdd(interface{}, bool) { c.hit() }

// OnUpdate sleeps delay first: only updates are slow, so the initial
// list does not make setup slow.
func (c *benchCounter) OnUpdate(interface{}, interface{}) {
	time.Sleep(c.delay)
	c.hit()
}
func (c *benchCounter) OnDelete(interface{}) { c.hit() }

// benchRunning is a synced informer over n pods with the given handlers.
type benchRunning struct {
	inf  clientcache.SharedIndexInformer
	lw   *benchLW
	stop func()
}

func startBenchInformer(b *testing.B, impl informerImpl, n int, handlers ...clientcache.ResourceEventHandler) benchRunning {
	lw := &benchLW{n: n, events: make(chan watch.Event, 1024)}
	r := runBenchInformer(b, impl, lw, handlers...)
	r.lw = lw
	return r
}

// runBenchInformer starts a namespace-indexed informer on lw and returns
// once every handler's registration has synced.
func runBenchInformer(b *testing.B, impl informerImpl, lw clientcache.ListerWatcher, handlers ...clientcache.ResourceEventHandler) benchRunning {
	inf := impl.newInformer(lw, &v1.Pod{}, 0, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
	var regs []clientcache.ResourceEventHandlerRegistration
	for _, h := range handlers {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			b.Fatal(err)
		}
		regs = append(regs, reg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	for _, reg := range regs {
		clientcache.WaitFor(context.Background(), "", reg.HasSyncedChecker())
	}
	return benchRunning{inf: inf, stop: func() { cancel(); <-done }}
}

// sendUpdates sends count watch updates cycling over the first n keys.
func (r benchRunning) sendUpdates(count, n int) {
	pods := benchPods()
	for i := 0; i < count; i++ {
		r.lw.events <- watch.Event{Type: watch.Modified, Object: pods[(i/n+1)%2][i%n]}
	}
}

// benchEventPods is the size of the events cases' cache.
const benchEventPods = 50000

// benchInformerEvents: four handlers, a 50k-object cache; one op is one
// watch event delivered to all four handlers, cycling over every key.
func benchInformerEvents(b *testing.B, impl informerImpl) {
	benchInformerEventsOver(b, impl, benchEventPods)
}

// benchInformerEventsOver is benchInformerEvents with the updates cycling
// over the first keys keys only. Besides events/s it reports the CPU time
// the whole process spends per event ("cpu-µs/event": every goroutine of
// the pipeline and the collector), which bounds events/s once the cores are
// busy, however the work is spread over them.
func benchInformerEventsOver(b *testing.B, impl informerImpl, keys int) {
	const n = benchEventPods
	counters := []*benchCounter{newBenchCounter(), newBenchCounter(), newBenchCounter(), newBenchCounter()}
	hs := make([]clientcache.ResourceEventHandler, len(counters))
	for i, c := range counters {
		c.expect(-1)
		hs[i] = c
	}
	r := startBenchInformer(b, impl, n, hs...)
	defer r.stop()
	for _, c := range counters {
		c.expect(int64(b.N))
	}
	runtime.GC() // the initial sync's garbage is setup, not event cost
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), startCPUPerOp(b)
	r.sendUpdates(b.N, keys)
	for _, c := range counters {
		<-c.done
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	cpu("cpu-µs/event")
}

// startCPUPerOp starts counting the process's CPU time; the function it
// returns reports the time since per op of b under metric, and nothing
// where the process's CPU time cannot be read.
func startCPUPerOp(b *testing.B) (report func(metric string)) {
	start, ok := processCPU()
	return func(metric string) {
		if end, ok2 := processCPU(); ok && ok2 {
			b.ReportMetric(float64(end-start)/float64(time.Microsecond)/float64(b.N), metric)
		}
	}
}

// disturbance is what runs beside the fast handlers in a disturbed run.
type disturbance int

const (
	// undisturbed is the baseline run: the fast handlers alone.
	undisturbed disturbance = iota
	// slowHandler is a fourth handler that sleeps 1ms per update.
	slowHandler
	// unattachedSleeper is a goroutine that sleeps 1ms in a loop and has
	// nothing to do with the informer: the control for slowHandler, which
	// separates what a slow handler costs through the informer from what
	// a goroutine waking every millisecond costs the process anyway.
	unattachedSleeper
	// blockedHandler is a fourth handler whose every update blocks until
	// the run ends: its backlog grows as the slow handler's does, without
	// any timer, so it measures what the growing backlog costs.
	blockedHandler
)

// penalty is what a disturbed run of the fast handlers is compared with,
// and the metric the ratio of their completion times is reported under.
type penalty struct {
	with, base disturbance
	metric     string
}

var (
	slowPenalty    = penalty{slowHandler, undisturbed, "slowpenalty"}
	blockPenalty   = penalty{blockedHandler, undisturbed, "blockpenalty"}
	sleeperPenalty = penalty{unattachedSleeper, undisturbed, "sleeperpenalty"}
	// slowOverSleeper is what a slow handler costs beyond what any
	// goroutine waking every millisecond costs the process: the part of
	// slowpenalty that the informer's handler isolation is answerable for.
	slowOverSleeper = penalty{slowHandler, unattachedSleeper, "slowoversleeper"}
)

func disturbedCase(name string, p penalty) benchCase {
	return benchCase{Name: name,
		Ours: func(b *testing.B) { benchInformerDisturbed(b, oursInformer, p) }, Theirs: func(b *testing.B) { benchInformerDisturbed(b, theirsInformer, p) }}
}

// benchInformerDisturbed: three fast handlers beside p.with, compared with
// the same beside p.base. One op is one event delivered to the fast
// handlers (timed: the first run beside p.with). The ratio of completion
// times, reported under p.metric, is 1.0 when p.with costs the fast
// handlers nothing more than p.base. Runs of the two kinds alternate in
// pairs, each pair in the other order than the last, so that a noisy
// neighbour on a shared machine and warm-up hit both alike; the median of
// the pairs' ratios is reported.
func benchInformerDisturbed(b *testing.B, impl informerImpl, p penalty) {
	b.StopTimer()
	const pairs = 7
	ratios := make([]float64, pairs)
	for i := range ratios {
		if i == 0 {
			b.StartTimer()
		}
		var with, base time.Duration
		if i%2 == 0 {
			with = benchFastHandlersRun(b, impl, p.with)
			b.StopTimer()
			base = benchFastHandlersRun(b, impl, p.base)
		} else {
			base = benchFastHandlersRun(b, impl, p.base)
			with = benchFastHandlersRun(b, impl, p.with)
		}
		ratios[i] = float64(with) / float64(base)
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[pairs/2], p.metric)
}

// benchFastHandlersRun times b.N events through three counting handlers,
// beside the disturbance d.
func benchFastHandlersRun(b *testing.B, impl informerImpl, d disturbance) time.Duration {
	const n = 10000
	counters := []*benchCounter{newBenchCounter(), newBenchCounter(), newBenchCounter()}
	hs := []clientcache.ResourceEventHandler{counters[0], counters[1], counters[2]}
	for _, c := range counters {
		c.expect(-1)
	}
	var unblock chan struct{}
	switch d {
	case slowHandler:
		slow := newBenchCounter()
		slow.expect(-1)
		slow.delay = time.Millisecond
		hs = append(hs, slow)
	case blockedHandler:
		unblock = make(chan struct{})
		hs = append(hs, clientcache.ResourceEventHandlerFuncs{UpdateFunc: func(interface{}, interface{}) { <-unblock }})
	case unattachedSleeper:
		defer startSleeper()()
	}
	r := startBenchInformer(b, impl, n, hs...)
	defer r.stop()
	if unblock != nil {
		// Deferred after stop, so run before it: stopping waits for the
		// blocked handler to return.
		defer close(unblock)
	}
	for _, c := range counters {
		c.expect(int64(b.N))
	}
	start := time.Now()
	r.sendUpdates(b.N, n)
	for _, c := range counters {
		<-c.done
	}
	return time.Since(start)
}

// startSleeper starts a goroutine that sleeps 1ms in a loop until the
// returned function is called; that function waits for it to exit.
func startSleeper() (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() { close(quit); <-done }
}

// benchInformerLateHandler: a 100k-object cache; one op adds a handler,
// waits until its registration reports HasSynced, and removes it.
func benchInformerLateHandler(b *testing.B, impl informerImpl) {
	r := startBenchInformer(b, impl, benchMaxPods)
	defer r.stop()
	clientcache.WaitFor(context.Background(), "", r.inf.HasSyncedChecker())
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		reg, err := r.inf.AddEventHandler(clientcache.ResourceEventHandlerFuncs{})
		if err != nil {
			b.Fatal(err)
		}
		clientcache.WaitFor(context.Background(), "", reg.HasSyncedChecker())
		if err := impl.shutDown(r.inf, reg); err != nil {
			b.Fatal(err)
		}
	}
}

// benchListOnceLW serves one prebuilt list (the reflector copies its items
// out, so sharing it between runs is safe) and then a watch that stays
// quiet, so one op measures the library's part of an initial sync, not
// building the list.
type benchListOnceLW struct{ list *v1.PodList }

func (lw benchListOnceLW) List(metav1.ListOptions) (apiruntime.Object, error) { return lw.list, nil }
func (lw benchListOnceLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	return benchWatch{make(chan watch.Event)}, nil
}
func (lw benchListOnceLW) IsWatchListSemanticsUnSupported() bool { return true }

// benchInformerInitialSync: one op starts a shared informer (namespace
// index, one handler) over a LIST of 100k pods and waits until the
// handler's registration has synced, as WaitForCacheSync would.
func benchInformerInitialSync(b *testing.B, impl informerImpl) {
	lw := benchListOnceLW{&v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: make([]v1.Pod, benchMaxPods)}}
	for i, p := range benchPods()[0] {
		lw.list.Items[i] = *p
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		runBenchInformer(b, impl, lw, clientcache.ResourceEventHandlerFuncs{}).stop()
	}
}
