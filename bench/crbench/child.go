package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	oicache "github.com/openinformer/cache"
	crcache "github.com/openinformer/cache/controllerruntime"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// syncReport is one child's start, as it reports it in its first line.
type syncReport struct {
	Impl string
	// FromProcess are seconds since the parent started the process; the
	// ready time is the later of every cache synced and the first
	// reconcile. SyncSeconds is from NewManager to synced (as before).
	SyncSeconds, ProcessToSynced, ProcessToFirstReconcile, ProcessToReady float64
	// CPU is user+sys seconds from the process's start to ready.
	CPUToReady float64
	// peaks are from the start until every cache synced.
	peaks
	// UntilReconciled are from the start until every object was
	// reconciled once (measure mode): the controllers' handlers are
	// added once their informers synced, and each receives an add for
	// every cached object then.
	UntilReconciled peaks
	// Measure mode only.
	SteadyHeapMB, GetP99Micros, ListP50Micros float64
	ListMatched, CachedPods                   int
	ReconciledEvents                          int64
	// Requests are the child's pod and secret collection requests, as
	// its transport sent them, until ready.
	Requests requestCounts
	// Outcomes are the restart outcomes crcache's informers reported.
	Outcomes []string
}

// peaks are the heap's highest samples: PeakHeapMB the heap object bytes
// (HeapAlloc), PeakLiveMB the live heap (marked by the last GC),
// PeakGoalMB the heap goal; GCs the cycles so far; AtPeak the state when
// the heap objects peaked.
type peaks struct {
	PeakHeapMB, PeakLiveMB, PeakGoalMB float64
	GCs                                uint64
	AtPeak                             peakState
}

// peakState is the process when its heap objects peaked.
type peakState struct {
	AtSeconds              float64
	HeapMB, LiveMB, GoalMB float64
	GCs                    uint64
	Reconciled             int64
	ProfileWritten         bool
}

// windowReport is the CPU the child spent while the parent drove updates.
type windowReport struct {
	Seconds, UserCPU, SysCPU float64
	Reconciles               int64
	AllocMB                  float64
	GCs                      uint64
}

// snapshotReport is what crcache's informers saved after the sync.
type snapshotReport struct {
	Saves   int
	Bytes   int64
	Objects int
	SaveSec float64
}

// child runs one operator: a manager with a no-op controller for Pods and
// one for Secrets, and measures it (see syncReport). It then obeys the
// parent's lines on stdin: "window" starts the CPU window, "end" ends it
// (once the reconciles went quiet) and "stop" exits; in restart mode it
// waits to be killed, after reporting its snapshot if it has one on.
func child(c config) error {
	// A restart child profiles from its start to ready; a measure child
	// profiles each CPU window instead (cpuWindow).
	wholeRun := ""
	if c.mode == "restart" {
		wholeRun = c.cpuProfile
	}
	stopProfile, err := startCPUProfile(wholeRun)
	if err != nil {
		return err
	}
	defer stopProfile()
	raw, err := os.ReadFile(c.kubeconfig)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, -1
	var reqs requestCounter
	cfg.WrapTransport = reqs.wrap
	snaps := &snapshotRecorder{}
	opts := ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}}
	switch c.impl {
	case "controller-runtime":
		opts.Cache = cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	case "crcache":
		o := crcache.Options{Defaults: crcache.InformerOptions{Compact: &oicache.CompactOptions{}, StripManagedFields: true}}
		if c.snapshotDir != "" {
			o.SnapshotDir, o.SnapshotMetrics = c.snapshotDir, snaps
			o.Defaults.Snapshot, o.Defaults.SnapshotInterval = true, c.snapshotInterval
		}
		opts.NewCache = crcache.New(o)
	default:
		return fmt.Errorf("unknown -impl %q", c.impl)
	}
	processStart := time.Unix(0, c.startedAt)
	if c.startedAt == 0 {
		processStart = time.Now()
	}
	var reconciled atomic.Int64
	var firstReconcile atomic.Int64
	// reads turns on a Get of the reconciled object from the cache, as
	// most reconcilers begin (the CPU windows run with and without it).
	var reads atomic.Bool
	sampler := startSampler(c.heapProfile, &reconciled)
	start := time.Now()
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	for _, newObj := range []func() client.Object{func() client.Object { return &corev1.Pod{} }, func() client.Object { return &corev1.Secret{} }} {
		obj := newObj()
		r := reconcilerFunc(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			if reconciled.Add(1) == 1 {
				firstReconcile.Store(time.Now().UnixNano())
			}
			if reads.Load() {
				return ctrl.Result{}, mgr.GetClient().Get(ctx, req.NamespacedName, newObj())
			}
			return ctrl.Result{}, nil
		})
		if err := ctrl.NewControllerManagedBy(mgr).For(obj).Complete(r); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync")
	}
	// The controllers' informers exist once their sources started;
	// GetInformer blocks until an informer synced. Their keys are counted,
	// not their objects listed: a List of every pod through the reader
	// would copy (or decode) the whole cache and make the peak the
	// benchmark's own.
	cached, err := cachedKeys(ctx, mgr.GetCache(), &corev1.Pod{}, c.pods)
	if err != nil {
		return err
	}
	if _, err := cachedKeys(ctx, mgr.GetCache(), &corev1.Secret{}, c.secrets); err != nil {
		return err
	}
	synced := time.Now()
	r := syncReport{Impl: c.impl, SyncSeconds: synced.Sub(start).Seconds(), ProcessToSynced: synced.Sub(processStart).Seconds(), CachedPods: cached}
	r.peaks = sampler.read()
	for firstReconcile.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	first := time.Unix(0, firstReconcile.Load())
	r.ProcessToFirstReconcile = first.Sub(processStart).Seconds()
	r.ProcessToReady = max(r.ProcessToSynced, r.ProcessToFirstReconcile)
	r.CPUToReady, _ = cpuSeconds()
	r.Requests = reqs.snapshot()
	r.Outcomes = snaps.outcomesSoFar()
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	if c.mode == "restart" {
		sampler.stop()
		stopProfile()
		if err := out.Encode(r); err != nil {
			return err
		}
		if c.snapshotDir != "" {
			// Wait for a save of each informer, then the parent kills the
			// process.
			if err := out.Encode(snaps.waitSaves([]int{c.pods, c.secrets}, 5*time.Minute)); err != nil {
				return err
			}
		}
		for in.Scan() {
		}
		return nil
	}
	// Steady state: every object reconciled once, so that no initial
	// notification is still queued for a handler.
	for reconciled.Load() < int64(c.pods+c.secrets) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	r.UntilReconciled = sampler.stop()
	r.SteadyHeapMB = steadyHeapMB()
	r.GetP99Micros = getP99(ctx, mgr.GetClient(), c.pods)
	r.ListP50Micros, r.ListMatched = listP50(ctx, mgr.GetClient())
	r.ReconciledEvents = reconciled.Load()
	if err := out.Encode(r); err != nil {
		return err
	}
	for in.Scan() {
		switch cmd, arg, _ := strings.Cut(in.Text(), " "); cmd {
		case "window":
			reads.Store(arg == "get")
			w, err := cpuWindow(in, &reconciled, windowProfile(c.cpuProfile, arg))
			if err != nil {
				return err
			}
			if err := out.Encode(w); err != nil {
				return err
			}
		case "stop":
			return nil
		}
	}
	return in.Err()
}

// windowProfile is where the window named reconciler is profiled, beside
// path (none when path is empty).
func windowProfile(path, reconciler string) string {
	if path == "" {
		return ""
	}
	return strings.TrimSuffix(path, ".pprof") + "-" + reconciler + ".pprof"
}

// cpuWindow measures from now until the parent's "end" and the reconciles
// going quiet for a second after it, profiling the CPU into profile if set.
func cpuWindow(in *bufio.Scanner, reconciled *atomic.Int64, profile string) (windowReport, error) {
	runtime.GC()
	stopProfile, err := startCPUProfile(profile)
	if err != nil {
		return windowReport{}, err
	}
	defer stopProfile()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	u0, s0 := rusage()
	r0 := reconciled.Load()
	start := time.Now()
	if !in.Scan() || in.Text() != "end" {
		return windowReport{}, fmt.Errorf("expected end, got %q", in.Text())
	}
	for last := reconciled.Load(); ; {
		time.Sleep(time.Second)
		n := reconciled.Load()
		if n == last {
			break
		}
		last = n
	}
	u1, s1 := rusage()
	runtime.ReadMemStats(&m1)
	return windowReport{Seconds: time.Since(start).Seconds(), UserCPU: u1 - u0, SysCPU: s1 - s0, Reconciles: reconciled.Load() - r0,
		AllocMB: float64(m1.TotalAlloc-m0.TotalAlloc) / (1 << 20), GCs: uint64(m1.NumGC - m0.NumGC)}, nil
}

func rusage() (user, sys float64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime), tv(ru.Stime)
}

func cpuSeconds() (float64, error) {
	u, s := rusage()
	return u + s, nil
}

// cachedKeys waits until obj's informer holds want keys and returns how
// many it holds.
func cachedKeys(ctx context.Context, c cache.Cache, obj client.Object, want int) (int, error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return 0, err
	}
	store := inf.(interface{ GetStore() toolscache.Store }).GetStore()
	for n := len(store.ListKeys()); ; n = len(store.ListKeys()) {
		if n >= want || ctx.Err() != nil {
			return n, ctx.Err()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type reconcilerFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcilerFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}

// sampler records the heap every 5 ms from runtime/metrics (no
// stop-the-world): heap object bytes (HeapAlloc), the live heap marked by
// the last GC, the heap goal. With a profile path it keeps the heap
// profile taken when the heap objects last rose 5% above the previous
// profile's, and writes it at stop.
type sampler struct {
	done, stopped                     chan struct{}
	began                             time.Time
	path                              string
	mu                                sync.Mutex
	peakHeap, peakLive, peakGoal, gcs uint64
	at                                peakState
	profile                           []byte
}

var sampleNames = []string{"/memory/classes/heap/objects:bytes", "/gc/heap/live:bytes", "/gc/heap/goal:bytes", "/gc/cycles/total:gc-cycles"}

func startSampler(profilePath string, reconciled *atomic.Int64) *sampler {
	s := &sampler{done: make(chan struct{}), stopped: make(chan struct{}), began: time.Now(), path: profilePath}
	samples := make([]metrics.Sample, len(sampleNames))
	for i, n := range sampleNames {
		samples[i].Name = n
	}
	go func() {
		defer close(s.stopped)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var profiled uint64
		for {
			metrics.Read(samples)
			heap, live, goal, gcs := samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64(), samples[3].Value.Uint64()
			s.mu.Lock()
			s.peakLive, s.peakGoal, s.gcs = max(s.peakLive, live), max(s.peakGoal, goal), gcs
			if heap > s.peakHeap {
				s.peakHeap = heap
				s.at = peakState{AtSeconds: time.Since(s.began).Seconds(), HeapMB: mb(heap), LiveMB: mb(live), GoalMB: mb(goal), GCs: gcs, Reconciled: reconciled.Load()}
				if s.path != "" && heap > profiled+profiled/20 {
					var b bytes.Buffer
					if pprof.Lookup("heap").WriteTo(&b, 0) == nil {
						s.profile, profiled = b.Bytes(), heap
						s.at.ProfileWritten = true
					}
				}
			}
			s.mu.Unlock()
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// read returns the peaks so far.
func (s *sampler) read() peaks {
	s.mu.Lock()
	defer s.mu.Unlock()
	return peaks{PeakHeapMB: mb(s.peakHeap), PeakLiveMB: mb(s.peakLive), PeakGoalMB: mb(s.peakGoal), GCs: s.gcs, AtPeak: s.at}
}

// stop ends the sampling, writes the profile of the peak if asked and
// returns the peaks.
func (s *sampler) stop() peaks {
	close(s.done)
	<-s.stopped
	if s.path != "" && s.profile != nil {
		_ = os.WriteFile(s.path, s.profile, 0o644)
	}
	return s.read()
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

func steadyHeapMB() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return mb(m.HeapAlloc)
}

// getP99 times 2000 cached Gets of pods spread over the collection.
func getP99(ctx context.Context, cl client.Client, pods int) float64 {
	const n = 2000
	d := make([]time.Duration, 0, n)
	for i := range n {
		var p corev1.Pod
		start := time.Now()
		_ = cl.Get(ctx, client.ObjectKey{Namespace: "bench", Name: podName((i * 7919) % pods)}, &p)
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	return float64(d[n*99/100].Microseconds())
}

// listP50 times 50 label-selected Lists, each matching 1% of the pods.
func listP50(ctx context.Context, cl client.Client) (float64, int) {
	const n = 50
	d := make([]time.Duration, 0, n)
	matched := 0
	for i := range n {
		var l corev1.PodList
		start := time.Now()
		_ = cl.List(ctx, &l, client.InNamespace("bench"), client.MatchingLabels{"group": fmt.Sprint(i % groups)})
		d = append(d, time.Since(start))
		matched = len(l.Items)
	}
	slices.Sort(d)
	return float64(d[n/2].Microseconds()), matched
}

// requestCounts classifies the GETs of pod and secret collections: a
// watch with sendInitialEvents=true is a watch-list, any other watch a
// watch; a LIST with limit=1 is a restart's probe, a LIST with a continue
// token a further page, any other LIST a full one.
type requestCounts struct {
	FullLists, ProbeLists, ListPages, WatchLists, Watches int64
}

type requestCounter struct {
	mu sync.Mutex
	c  requestCounts
}

func (rc *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet {
			rc.count(req)
		}
		return rt.RoundTrip(req)
	})
}

func (rc *requestCounter) count(req *http.Request) {
	p := req.URL.Path
	if !strings.HasSuffix(p, "/pods") && !strings.HasSuffix(p, "/secrets") {
		return
	}
	q := req.URL.Query()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch {
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		if q.Get("sendInitialEvents") == "true" {
			rc.c.WatchLists++
		} else {
			rc.c.Watches++
		}
	case q.Get("limit") == "1":
		rc.c.ProbeLists++
	case q.Get("continue") != "":
		rc.c.ListPages++
	default:
		rc.c.FullLists++
	}
}

func (rc *requestCounter) snapshot() requestCounts {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// snapshotRecorder is Options.SnapshotMetrics: the restart outcomes and
// the saves.
type snapshotRecorder struct {
	mu       sync.Mutex
	outcomes []string
	saves    []snapshotReport
}

func (s *snapshotRecorder) ObserveSnapshotSaved(took time.Duration, bytes int64, objects int, _ time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves = append(s.saves, snapshotReport{Saves: 1, Bytes: bytes, Objects: objects, SaveSec: took.Seconds()})
}

func (s *snapshotRecorder) ObserveSnapshotFailed() {}

func (s *snapshotRecorder) ObserveRestart(outcome string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcomes = append(s.outcomes, outcome)
}

func (s *snapshotRecorder) outcomesSoFar() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.outcomes)
}

// waitSaves waits for a save of each informer (told apart by their
// object counts: pods, secrets) and sums the latest of each.
func (s *snapshotRecorder) waitSaves(counts []int, limit time.Duration) snapshotReport {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		var sum snapshotReport
		for _, n := range counts {
			for i := len(s.saves) - 1; i >= 0; i-- {
				if g := s.saves[i]; g.Objects == n {
					sum.Saves++
					sum.Bytes += g.Bytes
					sum.Objects += g.Objects
					sum.SaveSec += g.SaveSec
					break
				}
			}
		}
		s.mu.Unlock()
		if sum.Saves == len(counts) {
			return sum
		}
		time.Sleep(10 * time.Millisecond)
	}
	return snapshotReport{}
}

// startCPUProfile profiles the process's CPU into path until the returned
// function is first called; nothing when path is empty.
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
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}, nil
}
