package cache

import (
	"context"
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

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
)

// TestCompactInitialSyncPeak measures the live heap an informer holds at
// the height of its initial sync (when the store has taken the last object
// of the initial list and the list itself is still alive) and once synced,
// over the fake server, for COMPACT_PEAK_PODS fixture pods and
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
			for _, mode := range peakModes {
				if only := os.Getenv("COMPACT_PEAK_ONLY"); only != "" && only != sync+"/"+mode.name {
					continue
				}
				peak, steady := syncHeap(t, load, sync == "list", mode)
				t.Logf("%-10s %-12s %-9s %d: steady %6.1f MB (%5.0f B each), peak during sync %6.1f MB: %.2fx steady",
					sync, mode.name, load.name, load.n, mb(steady), float64(steady)/float64(load.n), mb(peak), float64(peak)/float64(steady))
			}
		}
	}
}

// smallCRExample is an empty object of fixtures' small custom resources'
// kind.
func smallCRExample() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fixtures.SmallCustomResourceGVK)
	return u
}

// peakModes are the storage modes TestCompactInitialSyncPeak compares.
var peakModes = append(storageModes[:len(storageModes):len(storageModes)],
	storageMode{name: "compact-nohot", compact: &CompactOptions{HotObjects: -1}})

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
	inner  storedForm
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
	storage := inf.(*sharedIndexInformer).indexer.(*cache).storage
	p.inner, storage.form = storage.form, p
}

func (f *probeForm) hold(key string, obj any) (held any, err error) {
	held, err = f.inner.hold(key, obj)
	if f.calls.Add(1)%f.every == 0 {
		f.sample()
	}
	return held, err
}

// inPlace is the inner form's, so that the probe takes the same path.
func (f *probeForm) inPlace() bool { return f.inner.inPlace() }

func (f *probeForm) view(key string, held any, keep bool) (any, error) {
	obj, err := f.inner.view(key, held, keep)
	if f.sampleViews && f.views.Add(1)%f.every == 0 {
		f.sample()
	}
	return obj, err
}

func (f *probeForm) drop(key string) {
	f.inner.drop(key)
}

// syncHeap runs one informer over load and returns the live heap at the
// height of its initial sync and once synced, both beyond what the server
// and the test held before.
func syncHeap(t *testing.T, load peakLoad, listMode bool, mode storageMode) (peak, steady uint64) {
	opts := load.opts(load.n)
	opts.WatchListUnsupported = listMode
	srv := fake.MustNew(opts)
	lw := newStreamingLWOf(srv, load.example)
	base := liveHeap()
	inf := mode.newInformer(lw, load.example, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	profile := os.Getenv("COMPACT_PEAK_PROFILE")
	probeStore(inf, &probeForm{every: int64(max(load.n/8, 1)), sampleViews: true, sample: func() {
		if h := liveHeap(); h > peak {
			peak = h
			writeHeapProfile(t, profile)
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
	require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced))
	steady = liveHeap()
	require.Len(t, inf.GetStore().ListKeys(), load.n)
	cancel()
	wg.Wait()
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
