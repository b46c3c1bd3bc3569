package cache

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/snapshot"
)

// restartRecorder records what one handler is told, one line per call.
type restartRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *restartRecorder) record(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *restartRecorder) handler() *restartRecorder { return r }

func (r *restartRecorder) OnAdd(obj any, initial bool) {
	r.record("add %s initial=%v", podLine(obj), initial)
}

func (r *restartRecorder) OnUpdate(old, obj any) {
	r.record("update %s -> %s", podLine(old), podLine(obj))
}

func (r *restartRecorder) OnDelete(obj any) { r.record("delete %s", podLine(obj)) }

// sorted returns the lines in order: handlers' initial adds come in any order.
func (r *restartRecorder) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.lines))
}

// podLine is what a test compares of a pod: its key, version and label.
func podLine(obj any) string {
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		return "tombstone " + d.Key
	}
	p := obj.(*v1.Pod)
	return fmt.Sprintf("%s/%s@%s[%s]", p.Namespace, p.Name, p.ResourceVersion, p.Labels["v"])
}

// restartLog collects the informer's log lines.
type restartLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *restartLog) context(ctx context.Context) context.Context {
	logger := funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{Verbosity: 2})
	return klog.NewContext(ctx, logger)
}

// matching returns the lines containing s.
func (l *restartLog) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// restartMetrics records SnapshotMetrics' calls.
type restartMetrics struct {
	mu            sync.Mutex
	outcomes      []string
	saved, failed int
	objects       int
	bytes         int64
}

func (m *restartMetrics) ObserveSnapshotSaved(_ time.Duration, bytes int64, objects int, _ time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saved, m.bytes, m.objects = m.saved+1, bytes, objects
}

func (m *restartMetrics) ObserveSnapshotFailed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failed++
}

func (m *restartMetrics) ObserveRestart(outcome string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outcomes = append(m.outcomes, outcome)
}

// restartRun is one run of an informer with snapshots.
type restartRun struct {
	informer SharedIndexInformer
	rec      *restartRecorder
	log      *restartLog
	metrics  *restartMetrics
	stop     func()
}

// startWithSnapshot runs an informer of srv's pods with opts' snapshot and
// waits for it and its handler to sync.
func startWithSnapshot(t *testing.T, srv *fake.Server, opts SharedIndexInformerOptions) *restartRun {
	return startWithSnapshotOn(t, srv, opts)
}

// startWithSnapshotOn is startWithSnapshot over any ListerWatcher.
func startWithSnapshotOn(t *testing.T, lw ListerWatcher, opts SharedIndexInformerOptions) *restartRun {
	run := &restartRun{rec: &restartRecorder{}, log: &restartLog{}, metrics: &restartMetrics{}}
	so := *opts.Snapshot
	so.Metrics = run.metrics
	opts.Snapshot = &so
	inf := NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, opts)
	run.informer = inf
	reg, err := inf.AddEventHandler(run.rec.handler())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(run.log.context(t.Context()))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	run.stop = func() { cancel(); <-done }
	require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced))
	synctest.Wait()
	return run
}

// coldOracle syncs client-go's own informer from srv and returns its
// handler's lines and its cache, what a fresh sync gives.
func coldOracle(t *testing.T, srv *fake.Server) (lines, cached []string) {
	inf := clientcache.NewSharedIndexInformer(srv, &v1.Pod{}, 0, clientcache.Indexers{})
	rec := &restartRecorder{}
	reg, err := inf.AddEventHandler(rec.handler())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	require.True(t, clientcache.WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced))
	synctest.Wait()
	cached = cacheLines(inf.GetStore().List())
	cancel()
	<-done
	return rec.sorted(), cached
}

func cacheLines(objs []any) []string {
	out := make([]string, len(objs))
	for i, obj := range objs {
		out[i] = podLine(obj)
	}
	slices.Sort(out)
	return out
}

func labeledPod(name, v string) *v1.Pod {
	p := newTestPod("ns", name, "")
	p.Labels = map[string]string{"v": v}
	return p
}

// must fails t on a server write's error.
func must(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		require.NoError(t, err)
	}
}

// snapshotOptions are the informer options of a test with a snapshot at
// path, compact or not.
func snapshotOptions(path string, compactStore bool) SharedIndexInformerOptions {
	o := SharedIndexInformerOptions{
		Indexers: Indexers{NamespaceIndex: MetaNamespaceIndexFunc, "label": podLabelIndex},
		Snapshot: &SnapshotOptions{Path: path, Scope: &SnapshotScope{}, Interval: -1},
	}
	if compactStore {
		o.Compact = &CompactOptions{}
	}
	return o
}

// savedWithThreePods creates pods a, b and c on srv, runs an informer with
// a snapshot until it stops (its file saved) and returns the file's path
// and the options that restart from it.
func savedWithThreePods(t *testing.T, srv *fake.Server, compactStore bool) (string, SharedIndexInformerOptions) {
	t.Helper()
	for _, n := range []string{"a", "b", "c"} {
		must(t)(srv.Create(labeledPod(n, "1")))
	}
	path := filepath.Join(t.TempDir(), "pods.snap")
	opts := snapshotOptions(path, compactStore)
	startWithSnapshot(t, srv, opts).stop()
	return path, opts
}

// podLabelIndex indexes pods by their "v" label, an index a snapshot frames.
func podLabelIndex(obj any) ([]string, error) {
	return []string{obj.(*v1.Pod).Labels["v"]}, nil
}

// A warm restart makes no full sync, and its cache, index and handler
// notifications are a fresh sync's, with the writes and deletes made while
// it was down; the watch then goes on from the synced version.
func TestWarmRestartEqualsAColdSync(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, compactStore := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compactStore), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
				for _, n := range []string{"a", "b", "c"} {
					must(t)(srv.Create(labeledPod(n, "1")))
				}
				path := filepath.Join(t.TempDir(), "pods.snap")
				opts := snapshotOptions(path, compactStore)
				first := startWithSnapshot(t, srv, opts)
				first.stop()
				require.FileExists(t, path)
				assert.Equal(t, []string{"no snapshot"}, first.metrics.outcomes)
				assert.Equal(t, 1, first.metrics.saved, "saved once, when stopped")
				assert.Equal(t, 3, first.metrics.objects)
				assert.Positive(t, first.metrics.bytes)

				must(t)(srv.Update(labeledPod("a", "2")))
				must(t)(srv.Delete("ns", "b"))
				must(t)(srv.Create(labeledPod("d", "1")))
				srv.ResetRequests()

				warm := startWithSnapshot(t, srv, opts)
				assert.Equal(t, []string{RestartSynced}, warm.metrics.outcomes)
				counts := srv.RequestCounts()
				assert.Zero(t, counts.FullSyncs(), "requests %+v", counts)
				assert.Equal(t, 1, counts.ProbeLists)
				lines, cached := coldOracle(t, srv)
				assert.Equal(t, lines, warm.rec.sorted())
				assert.Equal(t, cached, cacheLines(warm.informer.GetStore().List()))
				byLabel, err := warm.informer.GetIndexer().ByIndex("label", "1")
				require.NoError(t, err)
				assert.Equal(t, []string{"ns/c@4[1]", "ns/d@7[1]"}, cacheLines(byLabel))
				inNS, err := warm.informer.GetIndexer().ByIndex(NamespaceIndex, "ns")
				require.NoError(t, err)
				assert.Len(t, inNS, 3)

				must(t)(srv.Delete("ns", "c"))
				synctest.Wait()
				assert.Contains(t, warm.rec.sorted(), "delete ns/c@8[1]")
				warm.stop()
			})
		})
	}
}

// Every case a snapshot cannot be used in falls back to a fresh sync, from
// a consistent read, logged once at Info with its reason (a first start at
// V(2)): cache and handlers get exactly a cold sync's, nothing the snapshot
// held survives.
func TestWarmRestartFallbacks(t *testing.T) {
	defer goleak.VerifyNone(t)
	cases := []struct {
		name, reason string
		// down changes the world while the informer is down; it returns
		// the server to restart against.
		down func(t *testing.T, srv *fake.Server, path string, opts *SharedIndexInformerOptions) *fake.Server
	}{
		{"first start", "no snapshot", func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) *fake.Server {
			require.NoError(t, os.Remove(path))
			return srv
		}},
		{"410", "snapshot older than the server's watch window", func(t *testing.T, srv *fake.Server, _ string, _ *SharedIndexInformerOptions) *fake.Server {
			srv.Compact()
			return srv
		}},
		{"foreign scope", "snapshot unusable", func(_ *testing.T, srv *fake.Server, _ string, opts *SharedIndexInformerOptions) *fake.Server {
			opts.Snapshot.Scope = &SnapshotScope{LabelSelector: "app=x"}
			return srv
		}},
		{"another version", "snapshot unusable", func(_ *testing.T, srv *fake.Server, _ string, opts *SharedIndexInformerOptions) *fake.Server {
			opts.Snapshot.Version = "2"
			return srv
		}},
		{"other indexes", "snapshot unusable", func(_ *testing.T, srv *fake.Server, _ string, opts *SharedIndexInformerOptions) *fake.Server {
			opts.Indexers = Indexers{NamespaceIndex: MetaNamespaceIndexFunc}
			return srv
		}},
		{"corrupt", "snapshot unusable", func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) *fake.Server {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			data[len(data)-20] ^= 0xff
			require.NoError(t, os.WriteFile(path, data, 0o600))
			return srv
		}},
		{"truncated", "snapshot unusable", func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) *fake.Server {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o600))
			return srv
		}},
		{"newer than the server", "snapshot newer than the server", func(t *testing.T, _ *fake.Server, _ string, _ *SharedIndexInformerOptions) *fake.Server {
			fresh := fake.MustNew(fake.Options{Object: &v1.Pod{}, WatchListUnsupported: true})
			must(t)(fresh.Create(labeledPod("z", "1")))
			return fresh
		}},
		{"timed out", "catch-up timed out", func(_ *testing.T, srv *fake.Server, _ string, opts *SharedIndexInformerOptions) *fake.Server {
			// A quiet resource: only the watch's pre-timeout bookmark,
			// 1 s after it opens, would pass the target.
			srv.AdvanceResourceVersion(5)
			opts.Snapshot.CatchUpTimeout = 500 * time.Millisecond
			return srv
		}},
	}
	for _, tc := range cases {
		for _, compactStore := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/compact=%v", tc.name, compactStore), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { testFallback(t, compactStore, tc.reason, tc.down) })
			})
		}
	}
}

func testFallback(t *testing.T, compactStore bool, reason string, down func(*testing.T, *fake.Server, string, *SharedIndexInformerOptions) *fake.Server) {
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, WatchListUnsupported: true})
	path, opts := savedWithThreePods(t, srv, compactStore)
	must(t)(srv.Update(labeledPod("a", "2")))
	must(t)(srv.Delete("ns", "b"))
	srv = down(t, srv, path, &opts)
	srv.ResetRequests()

	run := startWithSnapshot(t, srv, opts)
	defer run.stop()
	logged := run.log.matching("Warm restart not used")
	require.Len(t, logged, 1, "%v", run.log.matching(""))
	assert.Contains(t, logged[0], fmt.Sprintf("%q", reason))
	level := `"level"=0`
	if reason == "no snapshot" {
		level = `"level"=2`
	}
	assert.Contains(t, logged[0], level)
	assert.Equal(t, []string{reason}, run.metrics.outcomes)
	var lists []string
	for _, r := range srv.Requests() {
		if r.Kind() == fake.FullList {
			lists = append(lists, r.Options.ResourceVersion)
		}
	}
	assert.Equal(t, []string{""}, lists, "one full list, a consistent read")
	lines, cached := coldOracle(t, srv)
	assert.Equal(t, lines, run.rec.sorted())
	assert.Equal(t, cached, cacheLines(run.informer.GetStore().List()))
}

// A ListWatch made by NewFilteredListWatchFromClient knows its scope: the
// namespace and the selectors its modifier sets; a ListWatch made by hand
// does not, and an informer over it takes no snapshots unless given one.
func TestListWatchSnapshotScope(t *testing.T) {
	lw := NewFilteredListWatchFromClient(nil, "pods", "ns", func(o *metav1.ListOptions) {
		o.LabelSelector, o.FieldSelector = "app=web", "spec.nodeName=n1"
	})
	assert.Equal(t, &SnapshotScope{Namespace: "ns", LabelSelector: "app=web", FieldSelector: "spec.nodeName=n1"}, lw.snapshotScope())
	assert.Nil(t, (&ListWatch{}).snapshotScope())

	inf := newSharedIndexInformer(&ListWatch{}, &v1.Pod{}, SharedIndexInformerOptions{Snapshot: &SnapshotOptions{Path: "x"}}, nil)
	_, err := buildRestarter(inf, inf.lw, *inf.snapshot)
	assert.ErrorContains(t, err, "no SnapshotOptions.Scope")
}

// After a crash, the journal written since the last periodic snapshot
// brings the restart to the last batch applied: inside a watch window
// that the snapshot alone has left, the restart is still warm, and equals
// a cold sync. A torn journal is applied up to its last whole change.
func TestWarmRestartAfterACrashReplaysTheJournal(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, compactStore := range []bool{false, true} {
		for _, journal := range []string{"whole", "torn", "lost"} {
			t.Run(fmt.Sprintf("compact=%v/journal=%s", compactStore, journal), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { testJournalReplay(t, compactStore, journal) })
			})
		}
	}
}

// testJournalReplay restarts from a crash with the journal whole, torn,
// or lost: without it the snapshot alone is outside the window (410).
func testJournalReplay(t *testing.T, compactStore bool, kept string) {
	torn := kept == "torn"
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, HistorySize: 4})
	for _, n := range []string{"a", "b", "c"} {
		must(t)(srv.Create(labeledPod(n, "1")))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "pods.snap")
	opts := snapshotOptions(path, compactStore)
	opts.Snapshot.Interval = time.Minute
	run := startWithSnapshot(t, srv, opts)
	time.Sleep(time.Minute + time.Second) // the periodic snapshot
	snapRV := snapshotHeader(t, path).ResourceVersion

	// Six changes: the snapshot's version leaves the window of four.
	must(t)(srv.Update(labeledPod("a", "2")))
	must(t)(srv.Delete("ns", "b"))
	must(t)(srv.Create(labeledPod("d", "1")))
	must(t)(srv.Create(labeledPod("e", "1")))
	must(t)(srv.Update(labeledPod("c", "3")))
	must(t)(srv.Create(labeledPod("f", "1")))
	synctest.Wait()
	// The crash: what is on disk now is all the next start has.
	crashed := filepath.Join(t.TempDir(), "pods.snap")
	copyFile(t, path, crashed)
	journal, err := os.ReadFile(journalPath(path))
	require.NoError(t, err)
	if torn {
		journal = journal[:len(journal)-3]
	}
	if kept != "lost" {
		require.NoError(t, os.WriteFile(journalPath(crashed), journal, 0o600))
	}
	run.stop()
	assert.Equal(t, snapRV, snapshotHeader(t, crashed).ResourceVersion, "the crashed copy is the periodic snapshot")
	if torn {
		// The last change is lost with the tear: a server one change on
		// from the journal's end is still inside the window.
		must(t)(srv.Create(labeledPod("g", "1")))
	}
	srv.ResetRequests()

	opts.Snapshot = &SnapshotOptions{Path: crashed, Scope: &SnapshotScope{}, Interval: -1}
	warm := startWithSnapshot(t, srv, opts)
	defer warm.stop()
	if kept == "lost" {
		assert.Equal(t, []string{"snapshot older than the server's watch window"}, warm.metrics.outcomes)
		assert.Equal(t, 1, srv.RequestCounts().FullSyncs())
	} else {
		assert.Equal(t, []string{RestartSynced}, warm.metrics.outcomes, "%v", warm.log.matching("Warm restart"))
		assert.Zero(t, srv.RequestCounts().FullSyncs())
	}
	lines, cached := coldOracle(t, srv)
	assert.Equal(t, lines, warm.rec.sorted())
	assert.Equal(t, cached, cacheLines(warm.informer.GetStore().List()))
}

func copyFile(t *testing.T, from, to string) {
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o600))
}

// TestRandomizedRestarts restarts an informer again and again against one
// fake server (replaced, sometimes, by one with a lower resourceVersion).
// While the informer is down the server gets creates, updates, deletes,
// quiet downtimes (other resources' writes only), compactions and restarts
// of its own, and the files get faults: a truncated or corrupt snapshot, a
// torn or missing journal. Each start may meet request faults: a 429 or a
// refused connection on the probe or on the watch's start, and its
// catch-up watch may be cut after some events, closed or with a 410 or a
// 500. Each run then applies a few changes and stops, cleanly (syncing the
// journal or, past its bound, saving) or by a crash (what was on disk at
// that moment is all the next start has; never while the files may be
// those of a server since replaced, see restartWorld.foreign). After each start the cache and
// the handler's notifications equal client-go's cold sync, a warm start
// made no full sync, and the outcome is the one the disk, the server and
// the faults call for: 0 divergences.
//
// It makes 200 restarts with seed 29 by default;
// OPENINFORMER_RESTART_ROUNDS=1000 OPENINFORMER_RESTART_SEEDS=29,30,31
// makes the full run of docs/RESTART.md ("Testing restarts").
func TestRandomizedRestarts(t *testing.T) {
	defer goleak.VerifyNone(t)
	rounds := 200
	if v := os.Getenv("OPENINFORMER_RESTART_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "OPENINFORMER_RESTART_ROUNDS")
		rounds = n
	}
	seeds := []uint64{29}
	if v := os.Getenv("OPENINFORMER_RESTART_SEEDS"); v != "" {
		seeds = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			require.NoError(t, err, "OPENINFORMER_RESTART_SEEDS")
			seeds = append(seeds, n)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newRestartWorld(t, seed)
				for round := range rounds {
					w.round(round)
				}
				t.Logf("%d restarts, seed %d: %v", rounds, seed, w.stats)
				if rounds >= 100 {
					for _, what := range []string{"outcome " + RestartSynced, "outcome no snapshot", "outcome snapshot unusable",
						"outcome snapshot newer than the server", "outcome snapshot older than the server's watch window",
						"outcome catch-up failed", "stop journal", "stop snapshot", "stop crash", "resumed from the journal"} {
						assert.Positive(t, w.stats[what], "no restart with %q", what)
					}
				}
			})
		})
	}
}

// restartWorld is TestRandomizedRestarts' server, files and bookkeeping.
type restartWorld struct {
	t    *testing.T
	rng  *rand.Rand
	srv  *fake.Server
	path string
	// events are the resourceVersions of srv's events, oldest first, and
	// floor its last compaction's or restart's version: a watch from a
	// version below the window's start gets 410.
	events []uint64
	floor  uint64
	// foreign says the files on disk may come from a server since
	// replaced: until a stop saves, no crash keeps them, since the new
	// server's versions would pass theirs and a restart would resume a
	// foreign snapshot, the hazard of an etcd restore without
	// --bump-revision that docs/RESTART.md assumes away.
	foreign bool
	stats   map[string]int
}

// restartHistory is the server's window, in events.
const restartHistory = 8

func newRestartWorld(t *testing.T, seed uint64) *restartWorld {
	w := &restartWorld{t: t, rng: rand.New(rand.NewPCG(seed, seed)), path: filepath.Join(t.TempDir(), "pods.snap"),
		stats: map[string]int{}}
	w.srv = fake.MustNew(fake.Options{Object: &v1.Pod{}, HistorySize: restartHistory})
	for i := range 30 {
		w.write(func() (any, error) { return w.srv.Create(labeledPod(fmt.Sprintf("seed%03d", i), "1")) })
	}
	return w
}

// write makes one change to the server and records its event, if any (an
// update that changes nothing makes none).
func (w *restartWorld) write(change func() (any, error)) {
	before := w.srv.ResourceVersion()
	must(w.t)(change())
	if rv := w.srv.ResourceVersion(); rv != before {
		w.events = append(w.events, mustParseRV(w.t, rv))
	}
}

// writes makes up to n random changes among pods p0 to p9.
func (w *restartWorld) writes(n int) {
	for range w.rng.IntN(n + 1) {
		name := fmt.Sprintf("p%d", w.rng.IntN(10))
		_, err := w.srv.Get("ns", name)
		switch {
		case err != nil:
			w.write(func() (any, error) { return w.srv.Create(labeledPod(name, "0")) })
		case w.rng.IntN(3) == 0:
			w.write(func() (any, error) { return w.srv.Delete("ns", name) })
		default:
			w.write(func() (any, error) { return w.srv.Update(labeledPod(name, fmt.Sprint(w.rng.IntN(3)))) })
		}
	}
}

// windowStart is the oldest version a watch may start from.
func (w *restartWorld) windowStart() uint64 {
	start := w.floor
	if n := len(w.events); n > restartHistory {
		start = max(start, w.events[n-restartHistory-1])
	}
	return start
}

// round is one downtime, faults, start, check, a few changes and a stop.
func (w *restartWorld) round(round int) {
	t := w.t
	w.downtime()
	w.spoilFiles()
	want, resume := w.expected()
	want = w.requestFaults(want, resume)
	w.srv.ResetRequests()
	run := startWithSnapshot(t, w.srv, snapshotOptions(w.path, w.rng.IntN(3) != 0))
	require.Equal(t, []string{want}, run.metrics.outcomes, "round %d: %v", round, run.log.matching("Warm restart"))
	w.stats["outcome "+want]++
	if want == RestartSynced {
		require.Zero(t, w.srv.RequestCounts().FullSyncs(), "round %d", round)
		require.Equal(t, strconv.FormatUint(resume, 10), firstWatchFrom(t, w.srv), "round %d: resumed from", round)
	}
	lines, cached := coldOracle(t, w.srv)
	require.Equal(t, lines, run.rec.sorted(), "round %d", round)
	require.Equal(t, cached, cacheLines(run.informer.GetStore().List()), "round %d", round)

	w.writes(8)
	synctest.Wait()
	if w.rng.IntN(4) > 0 || w.foreign {
		run.stop()
		w.stats[map[bool]string{true: "stop snapshot", false: "stop journal"}[run.metrics.saved > 0]]++
		w.foreign = w.foreign && run.metrics.saved == 0
		return
	}
	disk := w.readFiles()
	run.stop()
	w.restoreFiles(disk)
	w.stats["stop crash"]++
}

// downtime changes the server while no informer runs.
func (w *restartWorld) downtime() {
	w.writes(12)
	switch w.rng.IntN(12) {
	case 0:
		w.srv.Compact()
		w.floor = mustParseRV(w.t, w.srv.ResourceVersion())
	case 1:
		w.srv.Restart(uint64(1 + w.rng.IntN(3)))
		w.floor = mustParseRV(w.t, w.srv.ResourceVersion())
	case 2, 3:
		w.srv.AdvanceResourceVersion(uint64(1 + w.rng.IntN(3)))
	case 4:
		if mustParseRV(w.t, w.srv.ResourceVersion()) > 40 {
			w.replaceServer()
		}
	}
}

// replaceServer puts a server with a lower resourceVersion in place of
// srv, as a cluster restored from an old backup: a snapshot is then newer
// than the server. Every replacement holds the same objects at the same
// versions, so a snapshot of one at its first version is one of the next.
func (w *restartWorld) replaceServer() {
	objs := []runtime.Object{labeledPod("p0", "9")}
	for i := range 10 {
		objs = append(objs, labeledPod(fmt.Sprintf("seed%03d", i), "1"))
	}
	w.srv = fake.MustNew(fake.Options{Object: &v1.Pod{}, HistorySize: restartHistory, Objects: objs})
	w.events, w.floor, w.foreign = nil, mustParseRV(w.t, w.srv.ResourceVersion()), true
	w.stats["server replaced"]++
}

// spoilFiles damages the snapshot or its journal at random.
func (w *restartWorld) spoilFiles() {
	switch w.rng.IntN(10) {
	case 0:
		w.spoil(w.path, "snapshot truncated", func(b []byte) []byte { return b[:w.rng.IntN(len(b))] })
	case 1:
		w.spoil(w.path, "snapshot corrupt", func(b []byte) []byte {
			b[w.rng.IntN(len(b))] ^= 0xff
			return b
		})
	case 2, 3:
		w.spoil(journalPath(w.path), "journal torn", func(b []byte) []byte { return b[:w.rng.IntN(len(b))] })
	case 4:
		if err := os.Remove(journalPath(w.path)); err == nil {
			w.stats["journal lost"]++
		}
	}
}

// spoil rewrites path's bytes with damage, when the file exists.
func (w *restartWorld) spoil(path, what string, damage func([]byte) []byte) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return
	}
	require.NoError(w.t, os.WriteFile(path, damage(b), 0o600))
	w.stats[what]++
}

// expected is the outcome the files and the server call for, before any
// request fault, and the version a warm start resumes from: the
// snapshot's, or its journal's last whole change.
func (w *restartWorld) expected() (string, uint64) {
	r, err := snapshot.Open(w.path, nil)
	if snapshot.ReasonOf(err) == snapshot.MissingReason {
		return "no snapshot", 0
	}
	if err != nil {
		return "snapshot unusable", 0
	}
	defer r.Close()
	for {
		if _, _, err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			return "snapshot unusable", 0
		}
	}
	h := r.Header()
	resume := mustParseRV(w.t, h.ResourceVersion)
	if j, err := snapshot.OpenJournal(journalPath(w.path), &h); err == nil {
		for c, err := j.Next(); err == nil; c, err = j.Next() {
			resume = mustParseRV(w.t, c.ResourceVersion)
		}
		require.NoError(w.t, j.Close())
	}
	if resume > mustParseRV(w.t, h.ResourceVersion) {
		w.stats["resumed from the journal"]++
	}
	switch {
	case resume > mustParseRV(w.t, w.srv.ResourceVersion()):
		return "snapshot newer than the server", resume
	case resume < w.windowStart():
		return "snapshot older than the server's watch window", resume
	}
	return RestartSynced, resume
}

// requestFaults injects faults into the requests of a start whose snapshot
// loads, and returns the outcome they call for.
func (w *restartWorld) requestFaults(want string, resume uint64) string {
	if want != RestartSynced && want != "snapshot older than the server's watch window" {
		return want
	}
	if w.rng.IntN(6) == 0 {
		w.srv.FailNextLists(1, w.retriable())
		w.stats["probe fault"]++
	}
	if w.rng.IntN(6) == 0 {
		w.srv.FailNextWatches(1+w.rng.IntN(2), w.retriable())
		w.stats["watch start fault"]++
	}
	if want != RestartSynced || w.rng.IntN(4) > 0 {
		return want
	}
	// The catch-up watch delivers the events after resume, then a
	// bookmark at the target unless the last event is at it; it is cut
	// after `after` of those.
	target := mustParseRV(w.t, w.srv.ResourceVersion())
	var pending int
	var last uint64
	for _, rv := range w.events {
		if rv > resume {
			pending, last = pending+1, rv
		}
	}
	syncsAt := pending + 1
	if pending > 0 && last == target {
		syncsAt = pending
	}
	after := w.rng.IntN(pending + 1)
	errs := []error{nil, fake.Expired("too old resource version"), fake.InternalError("etcd is sad")}
	outcomes := []string{RestartSynced, "snapshot older than the server's watch window", "catch-up failed"}
	k := w.rng.IntN(len(errs))
	w.srv.InterruptNextWatches(1, after, errs[k])
	w.stats["catch-up watch cut"]++
	if resume == target || after >= syncsAt {
		return RestartSynced
	}
	return outcomes[k]
}

func (w *restartWorld) retriable() error {
	if w.rng.IntN(2) == 0 {
		return fake.TooManyRequests(1)
	}
	return fake.ConnectionRefused()
}

// readFiles is what is on disk: the snapshot and its journal (nil when
// missing).
func (w *restartWorld) readFiles() [2][]byte {
	var disk [2][]byte
	for i, p := range []string{w.path, journalPath(w.path)} {
		if b, err := os.ReadFile(p); err == nil {
			disk[i] = b
		}
	}
	return disk
}

// restoreFiles puts back what readFiles read, as if the stop had not
// happened: a crash.
func (w *restartWorld) restoreFiles(disk [2][]byte) {
	for i, p := range []string{w.path, journalPath(w.path)} {
		if disk[i] == nil {
			require.NoError(w.t, os.RemoveAll(p))
			continue
		}
		require.NoError(w.t, os.WriteFile(p, disk[i], 0o600))
	}
}

func mustParseRV(t *testing.T, rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	require.NoError(t, err)
	return n
}

// seedPods creates n pods that no test changes: they make the snapshot
// large beside a few changes, as a real cache is.
func seedPods(t *testing.T, srv *fake.Server, n int) {
	for i := range n {
		must(t)(srv.Create(labeledPod(fmt.Sprintf("seed%03d", i), "1")))
	}
}

// firstWatchFrom is the resourceVersion of srv's first WATCH request since
// its requests were reset: where a restart resumed.
func firstWatchFrom(t *testing.T, srv *fake.Server) string {
	for _, r := range srv.Requests() {
		if r.Verb == fake.VerbWatch {
			return r.Options.ResourceVersion
		}
	}
	t.Fatal("no watch request")
	return ""
}

// A stop whose snapshot on disk and journal describe the final state
// syncs the journal and writes no snapshot, unless the journal has grown
// past a quarter of the snapshot, when it saves. Either way the next start
// resumes from the very version the stop reached, makes no full sync and
// equals client-go's cold sync: the changes the catch-up applied (while
// down before the warm start) and those applied while running are in the
// journal, none lost or applied twice.
func TestStopSyncsTheJournalWithinItsBound(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, compactStore := range []bool{false, true} {
		for _, running := range []int{3, 20} {
			t.Run(fmt.Sprintf("compact=%v/changes=%d", compactStore, running), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { testStopWithJournal(t, compactStore, running) })
			})
		}
	}
}

func testStopWithJournal(t *testing.T, compactStore bool, running int) {
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
	seedPods(t, srv, 40)
	path, opts := savedWithThreePods(t, srv, compactStore)
	saved := snapshotHeader(t, path)

	must(t)(srv.Update(labeledPod("a", "2")))
	must(t)(srv.Delete("ns", "b"))
	warm := startWithSnapshot(t, srv, opts)
	require.Equal(t, []string{RestartSynced}, warm.metrics.outcomes)
	must(t)(srv.Create(labeledPod("d", "1")))
	for i := range running - 1 {
		must(t)(srv.Update(labeledPod(fmt.Sprintf("seed%03d", i), "2")))
	}
	synctest.Wait()
	stoppedAt := srv.ResourceVersion()
	warm.stop()
	now := snapshotHeader(t, path)
	if running < 10 {
		assert.Zero(t, warm.metrics.saved, "the stop synced the journal")
		assert.Equal(t, saved.ResourceVersion, now.ResourceVersion)
		assert.Equal(t, saved.WrittenAt, now.WrittenAt)
	} else {
		assert.Equal(t, 1, warm.metrics.saved, "the journal passed its bound: the stop saved")
		assert.Equal(t, stoppedAt, now.ResourceVersion)
	}

	must(t)(srv.Delete("ns", "d"))
	must(t)(srv.Update(labeledPod("c", "3")))
	srv.ResetRequests()
	again := startWithSnapshot(t, srv, opts)
	defer again.stop()
	assert.Equal(t, []string{RestartSynced}, again.metrics.outcomes)
	assert.Zero(t, srv.RequestCounts().FullSyncs())
	assert.Equal(t, stoppedAt, firstWatchFrom(t, srv), "resumed where the stop left")
	lines, cached := coldOracle(t, srv)
	assert.Equal(t, lines, again.rec.sorted())
	assert.Equal(t, cached, cacheLines(again.informer.GetStore().List()))
	byLabel, err := again.informer.GetIndexer().ByIndex("label", "3")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/c@" + srv.ResourceVersion() + "[3]"}, cacheLines(byLabel))
}

// A crash (no stop) after a warm start resumes warm: the journal went on
// from the loaded snapshot and its replayed journal, so the next start
// reaches the last change applied, where the snapshot alone is outside
// the server's window (410).
func TestCrashAfterAWarmStartResumesWarm(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, compactStore := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compactStore), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, HistorySize: 4})
				path, opts := savedWithThreePods(t, srv, compactStore)
				must(t)(srv.Update(labeledPod("a", "2")))
				warm := startWithSnapshot(t, srv, opts)
				require.Equal(t, []string{RestartSynced}, warm.metrics.outcomes)
				for _, n := range []string{"d", "e", "f", "g", "h"} {
					must(t)(srv.Create(labeledPod(n, "1")))
				}
				must(t)(srv.Delete("ns", "b"))
				synctest.Wait()
				crashed := filepath.Join(t.TempDir(), "pods.snap")
				copyFile(t, path, crashed)
				copyFile(t, journalPath(path), journalPath(crashed))
				crashedAt := srv.ResourceVersion()
				warm.stop()
				must(t)(srv.Update(labeledPod("c", "2")))
				srv.ResetRequests()

				opts.Snapshot = &SnapshotOptions{Path: crashed, Scope: &SnapshotScope{}, Interval: -1}
				again := startWithSnapshot(t, srv, opts)
				defer again.stop()
				assert.Equal(t, []string{RestartSynced}, again.metrics.outcomes, "%v", again.log.matching("Warm restart"))
				assert.Zero(t, srv.RequestCounts().FullSyncs())
				assert.Equal(t, crashedAt, firstWatchFrom(t, srv))
				lines, cached := coldOracle(t, srv)
				assert.Equal(t, lines, again.rec.sorted())
				assert.Equal(t, cached, cacheLines(again.informer.GetStore().List()))
			})
		})
	}
}

// otherTypeLW serves srv but turns the watch's MODIFIED events of pod name
// into ConfigMaps, an object the informer's reflector refuses.
type otherTypeLW struct {
	*fake.Server
	name string
}

func (lw otherTypeLW) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}

func (lw otherTypeLW) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	w, err := lw.Server.WatchWithContext(ctx, options)
	if err != nil || w == nil {
		return w, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if p, ok := ev.Object.(*v1.Pod); ok && ev.Type == watch.Modified && p.Name == lw.name {
			ev.Object = &v1.ConfigMap{ObjectMeta: p.ObjectMeta}
		}
		return ev, true
	}), nil
}

// A catch-up event whose object is not of the informer's type is left
// out, reported as the reflector reports one from its watch, and the
// restart goes on: the reflector's expected-type check holds during the
// catch-up.
func TestCatchUpChecksTheObjectType(t *testing.T) {
	defer goleak.VerifyNone(t)
	var mu sync.Mutex
	var reported []string
	saved := utilruntime.ErrorHandlers
	// The default handlers' backoff sleeps on the real clock's last error,
	// which a synctest bubble's clock is decades before.
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, _ error, msg string, kv ...any) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, fmt.Sprint(msg, kv))
	}}
	defer func() { utilruntime.ErrorHandlers = saved }()
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		for _, n := range []string{"a", "b"} {
			must(t)(srv.Create(labeledPod(n, "1")))
		}
		path := filepath.Join(t.TempDir(), "pods.snap")
		opts := snapshotOptions(path, true)
		startWithSnapshot(t, srv, opts).stop()
		must(t)(srv.Update(labeledPod("a", "2")))
		must(t)(srv.Create(labeledPod("c", "1")))

		warm := startWithSnapshotOn(t, otherTypeLW{Server: srv, name: "a"}, opts)
		defer warm.stop()
		assert.Equal(t, []string{RestartSynced}, warm.metrics.outcomes)
		assert.Equal(t, []string{"ns/a@2[1]", "ns/b@3[1]", "ns/c@5[1]"}, cacheLines(warm.informer.GetStore().List()),
			"the ConfigMap was not applied")
	})
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, reported, 1, "%v", reported)
	assert.Regexp(t, `^Unexpected watch event object type\[reflector \S+ expectedType \*v1.Pod actualType \*v1.ConfigMap\]$`, reported[0])
}
