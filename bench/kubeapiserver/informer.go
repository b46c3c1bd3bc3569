package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgo "k8s.io/client-go/tools/cache"

	ours "github.com/openinformer/cache"
)

// coldAfter is the cold variants' CompactOptions.ColdAfter: short enough
// that a pod not updated in the steady phase goes cold within it.
const coldAfter = 15 * time.Second

// budgetPer100k is the budget variants' CompactOptions.MemoryBudget for
// 100,000 pods (issue 41's target), scaled to the pods served.
const budgetPer100k = 128 << 20

// budgetFor is the budget variants' MemoryBudget for pods.
func budgetFor(pods int) int64 { return int64(budgetPer100k) * int64(pods) / 100_000 }

// defaultVariants are the informers measured, each in its own process.
// A "-list" suffix starts it with the WatchListClient feature off, so the
// reflector LISTs instead of streaming the initial list.
const defaultVariants = "client-go,ours,compact-nohot,compact-hot,compact-strip,client-go-list,compact-hot-list"

// informer is the part of a SharedIndexInformer the measurement uses.
type informer interface {
	Run(stop <-chan struct{})
	HasSynced() bool
}

// counter counts the notifications an informer delivers, as a controller's
// handler that enqueues a key would receive them.
type counter struct{ adds, updates, deletes atomic.Int64 }

func (c *counter) OnAdd(any, bool)   { c.adds.Add(1) }
func (c *counter) OnUpdate(_, _ any) { c.updates.Add(1) }
func (c *counter) OnDelete(any)      { c.deletes.Add(1) }
func (c *counter) events() int64     { return c.adds.Load() + c.updates.Load() + c.deletes.Load() }

// newInformer builds the named variant's pod informer over all namespaces,
// listing and watching the way client-go's generated pod informer does.
func newInformer(name string, pods int, cs kubernetes.Interface, h *counter) (informer, func() int, func() bool, error) {
	base := strings.TrimSuffix(name, "-list")
	list := func(ctx context.Context, o metav1.ListOptions) (apiruntime.Object, error) {
		return cs.CoreV1().Pods("").List(ctx, o)
	}
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return cs.CoreV1().Pods("").Watch(ctx, o)
	}
	if base == "client-go" {
		lw := &clientgo.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: watchFn}
		inf := clientgo.NewSharedIndexInformer(clientgo.ToListWatcherWithWatchListSemantics(lw, cs),
			&corev1.Pod{}, 0, clientgo.Indexers{clientgo.NamespaceIndex: clientgo.MetaNamespaceIndexFunc})
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return nil, nil, nil, err
		}
		return inf, func() int { return len(inf.GetStore().ListKeys()) }, reg.HasSynced, nil
	}
	opts := ours.SharedIndexInformerOptions{Indexers: ours.Indexers{ours.NamespaceIndex: ours.MetaNamespaceIndexFunc}}
	switch base {
	case "ours":
	case "compact-nohot":
		opts.Compact = &ours.CompactOptions{HotObjects: -1}
	case "compact-hot":
		// 1000 is today's default; spelled out so the variant keeps its meaning.
		opts.Compact = &ours.CompactOptions{HotObjects: 1000}
	case "compact-strip":
		opts.Compact = &ours.CompactOptions{HotObjects: 1000}
		opts.StripManagedFields = true
	case "ours-strip":
		opts.StripManagedFields = true
	case "compact-cold":
		opts.Compact = &ours.CompactOptions{HotObjects: 1000, ColdAfter: coldAfter}
	case "compact-cold-strip":
		opts.Compact = &ours.CompactOptions{HotObjects: 1000, ColdAfter: coldAfter}
		opts.StripManagedFields = true
	case "compact-budget-strip":
		opts.Compact = &ours.CompactOptions{HotObjects: 1000, MemoryBudget: budgetFor(pods)}
		opts.StripManagedFields = true
	case "compact-budget":
		opts.Compact = &ours.CompactOptions{HotObjects: 1000, MemoryBudget: budgetFor(pods)}
	default:
		return nil, nil, nil, fmt.Errorf("unknown variant %q", name)
	}
	lw := &ours.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: watchFn}
	inf := ours.NewSharedIndexInformerWithOptions(ours.ToListWatcherWithWatchListSemantics(lw, cs), &corev1.Pod{}, opts)
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return nil, nil, nil, err
	}
	return inf, func() int { return len(inf.GetStore().ListKeys()) }, reg.HasSynced, nil
}

// syncReport is what one informer's initial sync cost, reported by the
// informer process to the harness as one JSON line.
type syncReport struct {
	Variant string
	Pods    int
	WallSec float64
	CPUSec  float64
	// GCSec is the part of CPUSec the runtime counts as the collector's
	// (runtime/metrics' estimate, assists included).
	GCSec      float64
	AllocBytes uint64
	// BaseLive, PeakLive and SteadyLive are the live heap (as of the last
	// GC) before the informer started, at its highest during the sync (at
	// least SteadyLive: those objects were live when the sync ended), and
	// after the sync and a forced GC.
	BaseLive, PeakLive, SteadyLive uint64
	// PeakHeap is the highest heap in objects, garbage not yet swept
	// included, during the sync: what the process's memory has to hold.
	PeakHeap uint64
}

// readyReport says the informer's handler has received its initial list,
// and how long after the informer's start.
type readyReport struct{ HandlerSyncedSec float64 }

// steadyReport is what the steady update phase cost the informer process.
type steadyReport struct {
	Events       int64
	CPUSec       float64
	GCSec        float64
	GCCycles     uint64
	AllocBytes   uint64
	AllocObjects uint64
	// EndLive is the live heap after the phase and a forced GC: with a
	// cold tier, what the objects left untouched cost once cold.
	EndLive uint64
	// MaxLive is the highest live heap after a GC from the informer's
	// start through its sync and the steady phase: what a memory budget
	// is held to.
	MaxLive uint64
	// SteadyMaxLive is the highest live heap after a GC in the steady
	// phase alone.
	SteadyMaxLive uint64
	// LateEvents arrived after the phase ended, until none came for two
	// seconds: events an informer was behind on, rather than lost.
	LateEvents int64
}

// runInformer is the informer role: sync, report, then measure between the
// harness's "start" and "stop" lines on stdin, report and exit.
func runInformer(c config) error {
	cs, err := kubernetes.NewForConfig(clientConfig(c.host, c.token))
	if err != nil {
		return err
	}
	h := &counter{}
	inf, count, handlerSynced, err := newInformer(c.variant, c.pods, cs, h)
	if err != nil {
		return err
	}
	runtime.GC()
	runtime.GC()
	before := sample()
	stopWhole := make(chan struct{})
	whole := make(chan peaks)
	go samplePeak(stopWhole, whole, c.heapProfile)
	stopSampler := make(chan struct{})
	peak := make(chan peaks)
	go samplePeak(stopSampler, peak, "")
	stop := make(chan struct{})
	defer close(stop)
	start := time.Now()
	go inf.Run(stop)
	for !inf.HasSynced() {
		time.Sleep(5 * time.Millisecond)
	}
	wall := time.Since(start)
	synced := sample()
	close(stopSampler)
	p := <-peak
	r := syncReport{Variant: c.variant, Pods: count(), WallSec: wall.Seconds(),
		CPUSec: synced.cpu - before.cpu, GCSec: synced.gc - before.gc, AllocBytes: synced.allocBytes - before.allocBytes,
		BaseLive: before.live, PeakHeap: p.heap}
	runtime.GC()
	runtime.GC()
	r.SteadyLive = sample().live
	r.PeakLive = max(p.live, synced.live, r.SteadyLive)
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return err
	}

	// The sync ends at the informer's HasSynced; a handler may still be
	// receiving its initial list (ours decode it on the handler's
	// goroutine), which must not count as steady events.
	if !waitFor(handlerSynced, syncLimit) {
		return fmt.Errorf("handler not synced after %v", syncLimit)
	}
	// The harness starts the updates once every informer's handler has
	// its initial list: an update before this one's start would count
	// for none.
	if err := json.NewEncoder(os.Stdout).Encode(readyReport{HandlerSyncedSec: time.Since(start).Seconds()}); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "start" {
		return fmt.Errorf("expected start, got %q", in.Text())
	}
	stopCPU, err := startCPUProfile(c.cpuProfile)
	if err != nil {
		return err
	}
	s0, e0 := sample(), h.events()
	stopSteady := make(chan struct{})
	steadyPeak := make(chan peaks)
	go samplePeak(stopSteady, steadyPeak, "")
	if !in.Scan() || in.Text() != "stop" {
		return fmt.Errorf("expected stop, got %q", in.Text())
	}
	s1, e1 := sample(), h.events()
	stopCPU()
	close(stopWhole)
	close(stopSteady)
	maxLive := max((<-whole).live, s1.live)
	steadyMax := max((<-steadyPeak).live, s1.live)
	runtime.GC()
	runtime.GC()
	endLive := sample().live
	late := settle(h.events) - e1
	return json.NewEncoder(os.Stdout).Encode(steadyReport{Events: e1 - e0, CPUSec: s1.cpu - s0.cpu, GCSec: s1.gc - s0.gc, GCCycles: s1.cycles - s0.cycles,
		AllocBytes: s1.allocBytes - s0.allocBytes, AllocObjects: s1.allocObjects - s0.allocObjects, EndLive: endLive, MaxLive: maxLive, SteadyMaxLive: steadyMax,
		LateEvents: late})
}

// settle waits until no event has arrived for two seconds, for at most 30
// seconds, and returns the count then.
func settle(events func() int64) int64 {
	last, quiet := events(), 0
	for deadline := time.Now().Add(30 * time.Second); quiet < 20 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if n := events(); n != last {
			last, quiet = n, 0
		} else {
			quiet++
		}
	}
	return last
}

// startCPUProfile starts profiling the process's CPU into path, if set,
// and returns what stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// counters are the process's CPU time and allocation counters at one moment.
type counters struct {
	cpu, sys, gc             float64
	allocBytes, allocObjects uint64
	live, cycles             uint64
}

var metricNames = []string{"/gc/heap/allocs:bytes", "/gc/heap/allocs:objects", "/gc/heap/live:bytes",
	"/cpu/classes/gc/total:cpu-seconds", "/gc/cycles/total:gc-cycles"}

func sample() counters {
	ms := make([]metrics.Sample, len(metricNames))
	for i, n := range metricNames {
		ms[i].Name = n
	}
	metrics.Read(ms)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	return counters{cpu: cpu, sys: time.Duration(ru.Stime.Nano()).Seconds(), allocBytes: ms[0].Value.Uint64(), allocObjects: ms[1].Value.Uint64(), live: ms[2].Value.Uint64(), gc: ms[3].Value.Float64(), cycles: ms[4].Value.Uint64()}
}

// peaks are the highest live heap and heap in objects seen.
type peaks struct{ live, heap uint64 }

// samplePeak reports the peaks seen every 2 ms until stop. With a profile
// path it writes the heap profile there each time the live heap passes its
// highest by 5%: the profile's in-use figures are as of the last GC, as the
// live heap is, so the last one written shows what the highest held.
func samplePeak(stop <-chan struct{}, out chan<- peaks, profile string) {
	ms := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	var p peaks
	var profiled uint64
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			out <- p
			return
		case <-t.C:
			metrics.Read(ms)
			p.live = max(p.live, ms[0].Value.Uint64())
			p.heap = max(p.heap, ms[1].Value.Uint64())
			if profile != "" && p.live > profiled+profiled/20 && writeHeapProfile(profile) == nil {
				profiled = p.live
			}
		}
	}
}

// writeHeapProfile writes the heap profile to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
