package cache

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
)

// TestCompactInitialSyncPeak measures the live heap an informer holds at
// the height of its initial sync (when the store has taken the last object
// of the initial list and the list itself is still alive) and once synced,
// over the fake server, for COMPACT_PEAK_PODS fixture pods (skipped when
// unset: 20k pods need about 2 GB and several minutes). Run it without -race:
//
//	COMPACT_PEAK_PODS=20000 go test -run TestCompactInitialSyncPeak -v -count=1 .
func TestCompactInitialSyncPeak(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("COMPACT_PEAK_PODS"))
	if n <= 0 {
		t.Skip("set COMPACT_PEAK_PODS to measure")
	}
	for _, sync := range []string{"watch-list", "list"} {
		for _, mode := range storageModes {
			peak, steady := syncHeap(t, n, sync == "list", mode)
			t.Logf("%-10s %-8s %d pods: steady %6.1f MB (%5.0f B/pod), peak during sync %6.1f MB: %.2fx steady",
				sync, mode.name, n, mb(steady), float64(steady)/float64(n), mb(peak), float64(peak)/float64(steady))
		}
	}
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// peakForm wraps a store's form (nil: objects held as they are) and
// measures the live heap every n/4 objects held (a compact informer's
// watch-list holds each object twice: as it arrives and when the store
// adopts it), with the writer stopped, so that nothing allocated meanwhile
// counts. peak is the largest.
type peakForm struct {
	inner storedForm
	every int64
	calls atomic.Int64
	peak  uint64
}

func (f *peakForm) hold(key string, obj any) (held any, err error) {
	held = obj
	if f.inner != nil {
		held, err = f.inner.hold(key, obj)
	}
	if f.calls.Add(1)%f.every == 0 {
		f.peak = max(f.peak, liveHeap())
	}
	return held, err
}

// encodes is the inner form's, so that the probe takes the same path.
func (f *peakForm) encodes() bool {
	e, ok := f.inner.(encodingForm)
	return ok && e.encodes()
}

func (f *peakForm) view(key string, held any) (any, error) {
	if f.inner == nil {
		return held, nil
	}
	return f.inner.view(key, held)
}

func (f *peakForm) drop(key string) {
	if f.inner != nil {
		f.inner.drop(key)
	}
}

// syncHeap runs one informer over n pods and returns the live heap at the
// height of its initial sync and once synced, both beyond what the server
// and the test held before.
func syncHeap(t *testing.T, n int, listMode bool, mode storageMode) (peak, steady uint64) {
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, WatchListUnsupported: listMode,
		Objects: fixtures.Objects(fixtures.Pods(1, n))})
	base := liveHeap()
	inf := mode.newInformer(srv, &v1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	storage := inf.(*sharedIndexInformer).indexer.(*cache).storage
	probe := &peakForm{inner: storage.form, every: max(int64(n)/4, 1)}
	storage.form = probe
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
	require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced))
	steady = liveHeap()
	require.Len(t, inf.GetStore().ListKeys(), n)
	cancel()
	wg.Wait()
	runtime.KeepAlive(srv)
	return probe.peak - base, steady - base
}
