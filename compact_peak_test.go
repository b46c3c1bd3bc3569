package cache

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
	"github.com/openinformer/cache/internal/form"
)

// TestCompactInitialSyncPeak measures the live heap an informer holds at
// the height of its initial sync (when the store has taken the last object
// of the initial list and the list itself is still alive) and once synced,
// over the fake server, beside client-go's own informer (NewSharedIndexInformer
// of client-go v0.37.2, the first of the ratios), for COMPACT_PEAK_PODS fixture pods and
// COMPACT_PEAK_CRS small custom resources (each skipped when unset: 20k pods
// need about 2 GB and several minutes). COMPACT_PEAK_ONLY=sync/mode (e.g.
// watch-list/compact-nohot) runs one case. COMPACT_PEAK_PROFILE names a file
// that gets the heap profile of the highest sample. Run it without -race:
//
//	COMPACT_PEAK_PODS=20000 COMPACT_PEAK_CRS=20000 go test -run TestCompactInitialSyncPeak -v -count=1 .
func TestCompactInitialSyncPeak(t *testing.T) {
	pods, _ := strconv.Atoi(os.Getenv("COMPACT_PEAK_PODS"))
	crs, _ := strconv.Atoi(os.Getenv("COMPACT_PEAK_CRS"))
	if pods <= 0 && crs <= 0 {
		t.Skip("set COMPACT_PEAK_PODS or COMPACT_PEAK_CRS to measure")
	}
	loads := []peakLoad{
		{name: "pods", n: pods, example: &v1.Pod{}, opts: func(n int) fake.Options {
			return fake.Options{Object: &v1.Pod{}, Objects: fixtures.Objects(fixtures.Pods(1, n))}
		}},
		{name: "small CRs", n: crs, example: smallCRExample(), opts: func(n int) fake.Options {
			return fake.Options{GroupVersionKind: fixtures.SmallCustomResourceGVK, Objects: fixtures.Objects(fixtures.SmallCustomResources(1, n))}
		}},
	}
	for _, load := range loads {
		if load.n <= 0 {
			continue
		}
		for _, sync := range []string{"watch-list", "list"} {
			var ref uint64
			for _, mode := range peakModes {
				if only := os.Getenv("COMPACT_PEAK_ONLY"); only != "" && only != sync+"/"+mode.name {
					continue
				}
				peak, steady := syncHeap(t, load, sync == "list", mode)
				if mode.clientGo {
					ref = peak
				}
				t.Logf("%-10s %-13s %-9s %d: steady %6.1f MB (%5.0f B each), peak during sync %6.1f MB: %.2fx steady, %s client-go's peak",
					sync, mode.name, load.name, load.n, mb(steady), float64(steady)/float64(load.n), mb(peak), float64(peak)/float64(steady), ofPeak(peak, ref))
			}
		}
	}
}

// ofPeak is peak as a ratio to client-go's, when that ran.
func ofPeak(peak, ref uint64) string {
	if ref == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", float64(peak)/float64(ref))
}

// smallCRExample is an empty object of fixtures' small custom resources'
// kind.
func smallCRExample() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fixtures.SmallCustomResourceGVK)
	return u
}

// peakMode is an informer TestCompactInitialSyncPeak measures: one of
// this package's storage modes, or client-go's own informer.
type peakMode struct {
	storageMode
	clientGo bool
}

// peakModes are the informers TestCompactInitialSyncPeak compares,
// client-go's first.
var peakModes = []peakMode{
	{storageMode: storageMode{name: "client-go"}, clientGo: true},
	{storageMode: storageModes[0]},
	{storageMode: storageModes[1]},
	{storageMode: storageMode{name: "compact-nohot", compact: &CompactOptions{HotObjects: -1}}},
}

// peakLoad is the content of a fake server to sync from.
type peakLoad struct {
	name    string
	n       int
	example k8sruntime.Object
	opts    func(n int) fake.Options
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// probeForm wraps a store's form and calls
// sample every so many objects held (a compact informer's watch-list holds
// each object twice: as it arrives and when the store adopts it) and read
// back (to index them, and for the handlers), with the caller stopped, so
// that nothing allocated meanwhile counts.
type probeForm struct {
	form.Form
	every  int64
	calls  atomic.Int64
	views  atomic.Int64
	sample func()
	// sampleViews samples on reads too.
	sampleViews bool
}

// probeStore makes inf's store hold and read through a probeForm; call
// before Run.
func probeStore(inf SharedIndexInformer, p *probeForm) {
	wrapInformerForm(inf, func(inner form.Form) form.Form {
		p.Form = inner
		return p
	})
}

func (f *probeForm) Hold(key string, obj any) (held any, err error) {
	held, err = f.Form.Hold(key, obj)
	if f.calls.Add(1)%f.every == 0 {
		f.sample()
	}
	return held, err
}

// HoldAhead is the inner form's, sampled like Hold.
func (f *probeForm) HoldAhead(key string, obj any) (held any, err error) {
	held, err = f.Form.HoldAhead(key, obj)
	if f.calls.Add(1)%f.every == 0 {
		f.sample()
	}
	return held, err
}

func (f *probeForm) View(key string, held any, keep bool) (any, error) {
	obj, err := f.Form.View(key, held, keep)
	if f.sampleViews && f.views.Add(1)%f.every == 0 {
		f.sample()
	}
	return obj, err
}

// syncHeap runs one informer over load and returns the live heap at the
// height of its initial sync and once synced, both beyond what the server
// and the test held before. This package's informers are sampled as their
// store holds and reads back objects; client-go's, whose store cannot be
// wrapped, as its transform sees them (as each arrives on a watch-list, and
// as the LIST's Replace queues them, with the list alive): that misses any
// peak of client-go's while its queue's objects enter the indexer, so its
// figure is a floor.
func syncHeap(t *testing.T, load peakLoad, listMode bool, mode peakMode) (peak, steady uint64) {
	opts := load.opts(load.n)
	opts.WatchListUnsupported = listMode
	srv := fake.MustNew(opts)
	lw := newStreamingLWOf(srv, load.example)
	base := liveHeap()
	profile := os.Getenv("COMPACT_PEAK_PROFILE")
	every := int64(max(load.n/8, 1))
	sample := func() {
		if h := liveHeap(); h > peak {
			peak = h
			writeHeapProfile(t, profile)
		}
	}
	indexers := Indexers{NamespaceIndex: MetaNamespaceIndexFunc}
	var inf interface {
		RunWithContext(context.Context)
		HasSynced() bool
		GetStore() clientgocache.Store
	}
	if mode.clientGo {
		cg := clientgocache.NewSharedIndexInformer(lw, load.example, 0, indexers)
		var seen atomic.Int64
		require.NoError(t, cg.SetTransform(func(obj any) (any, error) {
			if seen.Add(1)%every == 0 {
				sample()
			}
			return obj, nil
		}))
		inf = cg
	} else {
		ours := mode.newInformer(lw, load.example, 0, indexers)
		probeStore(ours, &probeForm{every: every, sampleViews: true, sample: sample})
		inf = ours
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
	require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced))
	steady = liveHeap()
	require.Len(t, inf.GetStore().ListKeys(), load.n)
	cancel()
	wg.Wait()
	require.Equal(t, !listMode, lw.watchLists.Load() > 0, "the sync took the path asked for")
	runtime.KeepAlive(lw)
	return max(peak, steady) - base, steady - base
}

// writeHeapProfile writes the heap profile to file, when named.
func writeHeapProfile(t *testing.T, file string) {
	if file == "" {
		return
	}
	f, err := os.Create(file)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, pprof.WriteHeapProfile(f))
}

// streamingLW is the fake server whose watch-list streams decode each
// object only as the stream reaches it, as a client does reading an API
// server's stream (the fake copies its whole state when a watch starts).
// Everything else is the fake's.
type streamingLW struct {
	*fake.Server
	keys [][2]string // namespace and name, in key order
	// example is the served type, of which the end bookmark is made.
	example k8sruntime.Object
	// watchLists counts the watch-list streams served.
	watchLists atomic.Int32
}

func newStreamingLW(srv *fake.Server) *streamingLW { return newStreamingLWOf(srv, &v1.Pod{}) }

// newStreamingLWOf is newStreamingLW for a server of example's type (for
// unstructured objects, with its kind set).
func newStreamingLWOf(srv *fake.Server, example k8sruntime.Object) *streamingLW {
	lw := &streamingLW{Server: srv, example: example}
	for _, obj := range srv.Objects() {
		m := obj.(metav1.Object)
		lw.keys = append(lw.keys, [2]string{m.GetNamespace(), m.GetName()})
	}
	return lw
}

func (lw *streamingLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents == nil || !*o.SendInitialEvents {
		return lw.Server.WatchWithContext(ctx, o)
	}
	lw.watchLists.Add(1)
	s := &lazyStream{lw: lw, result: make(chan watch.Event), stop: make(chan struct{}), rv: lw.ResourceVersion()}
	go s.run(ctx)
	return s, nil
}

// lazyStream is a watch-list stream over lw's objects that stays open,
// quiet, after its end bookmark.
type lazyStream struct {
	lw       *streamingLW
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	rv       string
}

func (s *lazyStream) ResultChan() <-chan watch.Event { return s.result }

func (s *lazyStream) Stop() { s.stopOnce.Do(func() { close(s.stop) }) }

func (s *lazyStream) run(ctx context.Context) {
	defer close(s.result)
	for _, k := range s.lw.keys {
		obj, err := s.lw.Get(k[0], k[1])
		if err != nil || !s.send(ctx, watch.Event{Type: watch.Added, Object: obj}) {
			return
		}
	}
	end := s.lw.example.DeepCopyObject()
	m := end.(metav1.Object)
	m.SetResourceVersion(s.rv)
	m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	if s.send(ctx, watch.Event{Type: watch.Bookmark, Object: end}) {
		s.send(ctx, watch.Event{})
	}
}

// send delivers ev, false once the stream is stopped. A zero event waits
// for the stop.
func (s *lazyStream) send(ctx context.Context, ev watch.Event) bool {
	out := s.result
	if ev.Object == nil {
		out = nil
	}
	select {
	case out <- ev:
		return true
	case <-s.stop:
	case <-ctx.Done():
	}
	return false
}
