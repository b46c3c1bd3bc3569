package cache

import (
	"context"
	"fmt"
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
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/fake"
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
	run := &restartRun{rec: &restartRecorder{}, log: &restartLog{}, metrics: &restartMetrics{}}
	so := *opts.Snapshot
	so.Metrics = run.metrics
	opts.Snapshot = &so
	inf := NewSharedIndexInformerWithOptions(srv, &v1.Pod{}, opts)
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
	for _, n := range []string{"a", "b", "c"} {
		must(t)(srv.Create(labeledPod(n, "1")))
	}
	path := filepath.Join(t.TempDir(), "pods.snap")
	opts := snapshotOptions(path, compactStore)
	startWithSnapshot(t, srv, opts).stop()
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

// Randomized restarts: writes, deletes, quiet downtimes and compactions
// while the informer is down, the store switching between compact and
// plain; after each restart the cache and the handlers' notifications
// equal client-go's cold sync, a warm restart made no full sync, and the
// outcome is the one the downtime calls for.
func TestRandomizedRestarts(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(29, 29))
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, HistorySize: 8})
		path := filepath.Join(t.TempDir(), "pods.snap")
		want := "no snapshot"
		for round := range 60 {
			srv.ResetRequests()
			run := startWithSnapshot(t, srv, snapshotOptions(path, round%3 != 0))
			require.Equal(t, []string{want}, run.metrics.outcomes, "round %d", round)
			if want == RestartSynced {
				require.Zero(t, srv.RequestCounts().FullSyncs(), "round %d", round)
			}
			lines, cached := coldOracle(t, srv)
			require.Equal(t, lines, run.rec.sorted(), "round %d", round)
			require.Equal(t, cached, cacheLines(run.informer.GetStore().List()), "round %d", round)
			run.stop()
			want = downtime(t, rng, srv)
		}
	})
}

// downtime changes srv at random while no informer runs and returns the
// outcome the next restart must have: the window holds 8 events, and a
// watch from the version just before the oldest is still served.
func downtime(t *testing.T, rng *rand.Rand, srv *fake.Server) string {
	before := srv.ResourceVersion()
	for range rng.IntN(12) {
		name := fmt.Sprintf("p%d", rng.IntN(10))
		_, err := srv.Get("ns", name)
		switch {
		case err != nil:
			must(t)(srv.Create(labeledPod(name, "0")))
		case rng.IntN(3) == 0:
			must(t)(srv.Delete("ns", name))
		default:
			must(t)(srv.Update(labeledPod(name, fmt.Sprint(rng.IntN(3)))))
		}
	}
	// An update that changes nothing makes no event.
	events := mustParseRV(t, srv.ResourceVersion()) - mustParseRV(t, before)
	switch {
	case events > 0 && rng.IntN(5) == 0:
		srv.Compact()
		return "snapshot older than the server's watch window"
	case events > 8:
		return "snapshot older than the server's watch window"
	case rng.IntN(4) == 0:
		srv.AdvanceResourceVersion(uint64(1 + rng.IntN(3)))
	}
	return RestartSynced
}

func mustParseRV(t *testing.T, rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	require.NoError(t, err)
	return n
}
