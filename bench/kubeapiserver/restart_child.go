package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	clientgo "k8s.io/client-go/tools/cache"

	ours "github.com/openinformer/cache"
)

// syncLimit bounds how long a start may take before the child gives up.
const syncLimit = 15 * time.Minute

// syncPoint is what a start cost from Run until one HasSynced turned true.
type syncPoint struct {
	WallSec, CPUSec, SysSec, GCSec float64
	AllocBytes                     uint64
	Requests                       requests
}

// startReport is one informer start in restart mode, reported by the
// child to the harness as one JSON line.
type startReport struct {
	Variant string
	// RunAt is when Run was called (Unix nanoseconds), for the downtime.
	RunAt int64
	// Informer is at the informer's HasSynced (its store and listers
	// synced), Handler at the handler registration's (every initial add
	// delivered), which comes later or at the same time.
	Informer, Handler syncPoint
	// BaseLive is the live heap before Run; PeakLive the highest
	// /gc/heap/live:bytes sampled until the handler synced, never below
	// SteadyLive, the live heap after it and a forced GC; PeakHeap the
	// highest /memory/classes/heap/objects:bytes, unswept objects included.
	BaseLive, PeakLive, SteadyLive, PeakHeap uint64
	// Outcome is what SnapshotOptions.Metrics was told ("" for client-go).
	Outcome string
	// Pods is the store's key count once the handler synced.
	Pods int
}

// verifyReport compares the handler's initial list with an exact LIST at
// the newest resourceVersion in it (see verifyInitial).
type verifyReport struct {
	Initial, Listed int
	// Others counts notifications other than initial adds until the
	// check (the updates of the load after the sync); Late the initial
	// adds that came after one of them, which must be none.
	Others, Late int
	RV           string
	Equal        bool
	Err          string
}

// stopReport is how long Run took to return once its stop channel closed
// and, for ours, the snapshot it wrote.
type stopReport struct {
	StopSec         float64
	SnapshotBytes   int64
	SnapshotObjects int
	SaveSec         float64
}

// runRestartChild is the restart role: one start of one informer (cold, or
// warm if its snapshot exists), measured until its handler synced, then
// checked, then stopped when the harness says so.
func runRestartChild(c config) error {
	cfg := clientConfig(c.host, c.token)
	var t traffic
	t.instrument(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	rec := &initialRecorder{}
	sm := &snapshotRecorder{}
	s, err := newRestartInformer(c.variant, c.snapshot, cs, &t, rec, sm)
	if err != nil {
		return err
	}
	rep, stop, err := measureStart(s, &t)
	if err != nil {
		return err
	}
	rep.Variant, rep.Outcome = c.variant, sm.outcomeOf()
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(rep); err != nil {
		return err
	}
	if err := out.Encode(verifyInitial(clientConfig(c.host, c.token), rec)); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "stop" {
		return fmt.Errorf("expected stop, got %q", in.Text())
	}
	runtime.GC()
	began := time.Now()
	stop()
	st := stopReport{StopSec: time.Since(began).Seconds()}
	st.SnapshotBytes, st.SnapshotObjects, st.SaveSec = sm.saved()
	return out.Encode(st)
}

// started is an informer under measurement.
type started struct {
	run                 func(stop <-chan struct{})
	synced, handlerSync func() bool
	keys                func() int
}

// newRestartInformer builds client-go's pod informer ("client-go") or
// ours, compact with the default hot cache and a snapshot at path saved
// only when it stops ("ours"), each with rec as its one handler and its
// requests counted by t.
func newRestartInformer(variant, path string, cs kubernetes.Interface, t *traffic, rec *initialRecorder, sm *snapshotRecorder) (started, error) {
	list := func(ctx context.Context, o metav1.ListOptions) (apiruntime.Object, error) {
		t.countList(o)
		return cs.CoreV1().Pods("").List(ctx, o)
	}
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		t.countWatch(o)
		return cs.CoreV1().Pods("").Watch(ctx, o)
	}
	switch variant {
	case "client-go":
		lw := &clientgo.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: watchFn}
		inf := clientgo.NewSharedIndexInformer(clientgo.ToListWatcherWithWatchListSemantics(lw, cs),
			&corev1.Pod{}, 0, clientgo.Indexers{clientgo.NamespaceIndex: clientgo.MetaNamespaceIndexFunc})
		reg, err := inf.AddEventHandler(rec)
		if err != nil {
			return started{}, err
		}
		return started{inf.Run, inf.HasSynced, reg.HasSynced, func() int { return len(inf.GetStore().ListKeys()) }}, nil
	case "ours":
		if path == "" {
			return started{}, fmt.Errorf("variant ours needs -snapshot")
		}
		lw := &ours.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: watchFn}
		inf := ours.NewSharedIndexInformerWithOptions(ours.ToListWatcherWithWatchListSemantics(lw, cs), &corev1.Pod{},
			ours.SharedIndexInformerOptions{
				Indexers: ours.Indexers{ours.NamespaceIndex: ours.MetaNamespaceIndexFunc},
				Compact:  &ours.CompactOptions{},
				// A ListWatch of funcs carries no scope: it lists every
				// namespace without selectors, the empty scope.
				Snapshot: &ours.SnapshotOptions{Path: path, Scope: &ours.SnapshotScope{}, Interval: -1, Metrics: sm},
			})
		reg, err := inf.AddEventHandler(rec)
		if err != nil {
			return started{}, err
		}
		return started{inf.Run, inf.HasSynced, reg.HasSynced, func() int { return len(inf.GetStore().ListKeys()) }}, nil
	}
	return started{}, fmt.Errorf("unknown restart variant %q (client-go or ours)", variant)
}

// measureStart runs s until its handler synced and reports the cost; stop
// ends Run and returns once it has returned.
func measureStart(s started, t *traffic) (startReport, func(), error) {
	runtime.GC()
	runtime.GC()
	before := sample()
	stopSampler := make(chan struct{})
	peak := make(chan peaks)
	go samplePeak(stopSampler, peak, "")
	stopCh := make(chan struct{})
	done := make(chan struct{})
	began := time.Now()
	go func() { defer close(done); s.run(stopCh) }()
	stop := func() { close(stopCh); <-done }
	rep := startReport{RunAt: began.UnixNano(), BaseLive: before.live}
	point := func() syncPoint {
		now := sample()
		return syncPoint{WallSec: time.Since(began).Seconds(), CPUSec: now.cpu - before.cpu, SysSec: now.sys - before.sys,
			GCSec: now.gc - before.gc, AllocBytes: now.allocBytes - before.allocBytes, Requests: t.snapshot()}
	}
	if !waitFor(s.synced, syncLimit) {
		close(stopSampler)
		stop()
		return rep, nil, fmt.Errorf("informer not synced after %v", syncLimit)
	}
	rep.Informer = point()
	ok := waitFor(s.handlerSync, syncLimit)
	rep.Handler = point()
	close(stopSampler)
	p := <-peak
	if !ok {
		stop()
		return rep, nil, fmt.Errorf("handler not synced after %v", syncLimit)
	}
	rep.Pods = s.keys()
	runtime.GC()
	runtime.GC()
	rep.SteadyLive = sample().live
	rep.PeakLive, rep.PeakHeap = max(p.live, rep.SteadyLive), p.heap
	return rep, stop, nil
}

// waitFor polls cond every millisecond until it holds or limit passes.
func waitFor(cond func() bool, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// initialRecorder is the one handler: it keeps an order-independent digest
// of the initial list's key→resourceVersion pairs rather than the pairs,
// so that checking costs the measured heap nothing.
type initialRecorder struct {
	mu             sync.Mutex
	initial        int
	digest, maxRV  uint64
	others, late   int
	badRV, notMeta int
}

func (r *initialRecorder) OnAdd(obj any, isInInitialList bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !isInInitialList {
		r.others++
		return
	}
	if r.others > 0 {
		r.late++
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		r.notMeta++
		return
	}
	r.add(m.GetNamespace(), m.GetName(), m.GetResourceVersion())
}

func (r *initialRecorder) add(namespace, name, rv string) {
	r.initial++
	r.digest += pairHash(namespace, name, rv)
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		r.badRV++
		return
	}
	r.maxRV = max(r.maxRV, v)
}

func (r *initialRecorder) OnUpdate(_, _ any) { r.other() }
func (r *initialRecorder) OnDelete(any)      { r.other() }

func (r *initialRecorder) other() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.others++
}

// pairHash is FNV-1a over namespace/name\x00rv, then mixed (SplitMix64's
// finalizer) so that a sum of hashes is a sound set digest.
func pairHash(namespace, name, rv string) uint64 {
	h := uint64(14695981039346656037)
	for _, s := range [...]string{namespace, "/", name, "\x00", rv} {
		for i := range len(s) {
			h ^= uint64(s[i])
			h *= 1099511628211
		}
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// verifyInitial lists the pods' metadata at exactly the newest
// resourceVersion the handler's initial list holds and compares the two
// key→resourceVersion sets. The harness writes nothing but status patches
// while an informer starts, and every delete or create of the downtime
// before it, so the state at that version is the state the informer
// synced at: a patch after it would be in the initial list with a newer
// version.
func verifyInitial(cfg *rest.Config, rec *initialRecorder) verifyReport {
	rec.mu.Lock()
	v := verifyReport{Initial: rec.initial, Others: rec.others, Late: rec.late, RV: strconv.FormatUint(rec.maxRV, 10)}
	want, bad := rec.digest, rec.badRV+rec.notMeta
	rec.mu.Unlock()
	if bad > 0 {
		v.Err = fmt.Sprintf("%d initial objects without metadata or a numeric resourceVersion", bad)
		return v
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		v.Err = err.Error()
		return v
	}
	pods := mc.Resource(corev1.SchemeGroupVersion.WithResource("pods"))
	listed := &initialRecorder{}
	opts := metav1.ListOptions{ResourceVersion: v.RV, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: 5000}
	for {
		l, err := pods.List(context.Background(), opts)
		if err != nil {
			v.Err = err.Error()
			return v
		}
		for i := range l.Items {
			listed.add(l.Items[i].Namespace, l.Items[i].Name, l.Items[i].ResourceVersion)
		}
		if l.Continue == "" {
			break
		}
		// A continue token carries the version; the request must not.
		opts = metav1.ListOptions{Continue: l.Continue, Limit: opts.Limit}
	}
	v.Listed = listed.initial
	v.Equal = v.Listed == v.Initial && listed.digest == want && v.Late == 0
	return v
}

// snapshotRecorder is SnapshotOptions.Metrics: the start's outcome and the
// last snapshot saved.
type snapshotRecorder struct {
	mu      sync.Mutex
	outcome string
	bytes   int64
	objects int
	took    time.Duration
}

func (s *snapshotRecorder) ObserveSnapshotSaved(took time.Duration, bytes int64, objects int, _ time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.took, s.bytes, s.objects = took, bytes, objects
}

func (s *snapshotRecorder) ObserveSnapshotFailed() {}

func (s *snapshotRecorder) ObserveRestart(outcome string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcome = outcome
}

func (s *snapshotRecorder) outcomeOf() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outcome
}

func (s *snapshotRecorder) saved() (int64, int, float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes, s.objects, s.took.Seconds()
}
