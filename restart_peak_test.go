package cache

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
)

// TestWarmRestartPeak measures the live heap of a compact informer (default
// hot cache, namespace index) starting warm from a snapshot of
// RESTART_PEAK_PODS fixture pods on the fake server, and cold beside it,
// two ways. Sampled, as the real-server harness does: /gc/heap/live:bytes
// read every 2 ms from the start until the handler's registration has
// synced. Paused: the handler collects and reads it every eighth of the
// adds (see startHeap). Each peak is over the same metric after a forced
// collection once synced, both less what was live before the start.
//
// The fake server's objects, live throughout, would put off every
// collection of a 20k start at the default GOGC, so the start runs at
// GOGC=RESTART_PEAK_GOGC (10 when unset): collections come more often than
// in a process holding only the informer. RESTART_PEAK_HOT sets
// CompactOptions.HotObjects. RESTART_PEAK_PROFILE names a file that gets
// the heap profile of the highest sample (sampled runs), with ".base" and
// ".steady" appended those before the start and once synced. Skipped when
// RESTART_PEAK_PODS is unset (20k pods take about three minutes); run it
// without -race:
//
//	RESTART_PEAK_PODS=20000 go test -run TestWarmRestartPeak -v -count=1 .
func TestWarmRestartPeak(t *testing.T) {
	pods, _ := strconv.Atoi(os.Getenv("RESTART_PEAK_PODS"))
	if pods <= 0 {
		t.Skip("set RESTART_PEAK_PODS to measure")
	}
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, Objects: fixtures.Objects(fixtures.Pods(29, pods))})
	opts := SharedIndexInformerOptions{Indexers: Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, Compact: &CompactOptions{HotObjects: hotObjectsEnv()},
		Snapshot: &SnapshotOptions{Path: filepath.Join(t.TempDir(), "pods.snap"), Scope: &SnapshotScope{}, Interval: -1}}
	runToSync(t, NewSharedIndexInformerWithOptions(srv, &v1.Pod{}, opts), pods, nil, nil) // writes the snapshot
	cold := opts
	cold.Snapshot = nil
	for _, start := range []struct {
		name string
		opts SharedIndexInformerOptions
	}{{"warm", opts}, {"cold", cold}} {
		for _, paused := range []bool{false, true} {
			for range 3 {
				peak, steady := startHeap(t, srv, start.opts, pods, paused)
				t.Logf("%s start of %d pods, paused %-5v: steady %6.1f MB (%5.0f B each), peak %6.1f MB: %.3fx steady",
					start.name, pods, paused, mb(steady), float64(steady)/float64(pods), mb(peak), float64(peak)/float64(steady))
			}
		}
	}
}

// startHeap starts an informer (warm when opts take snapshots) and returns
// the highest live heap sampled until its handler synced, and the live
// heap once synced, both beyond what was live before. When paused, the samples are taken instead
// by the handler itself, with a collection, every eighth of the adds: its
// listener, which decodes the adds, is then stopped, so the sample is what
// is reachable, without the garbage a collection counts as live when it
// is allocated while the collection marks.
func startHeap(t *testing.T, srv *fake.Server, opts SharedIndexInformerOptions, pods int, paused bool) (peak, steady uint64) {
	gogc, err := strconv.Atoi(os.Getenv("RESTART_PEAK_GOGC"))
	if err != nil {
		gogc = 10
	}
	defer debug.SetGCPercent(debug.SetGCPercent(gogc))
	base := liveHeapMetric(true)
	profile := os.Getenv("RESTART_PEAK_PROFILE")
	if profile != "" {
		writeLookupHeapProfile(t, profile+".base")
	}
	inf := NewSharedIndexInformerWithOptions(srv, &v1.Pod{}, opts)
	var held atomic.Uint64 // written by the listener's goroutine
	stop := held.Load
	sample := func() { held.Store(max(held.Load(), liveHeapMetric(true))) }
	if !paused {
		stop, sample = sampleLiveHeap(t, profile), nil
	}
	runToSync(t, inf, pods, sample, func() {
		peak = stop()
		steady = liveHeapMetric(true)
		if profile != "" {
			writeLookupHeapProfile(t, profile+".steady")
		}
	})
	return max(peak, steady) - base, steady - base
}

// runToSync runs inf until its handler has every initial add, calls synced
// (when not nil) while it still runs, then stops it. The handler calls
// sample (when not nil) every eighth of the adds.
func runToSync(t *testing.T, inf SharedIndexInformer, pods int, sample, synced func()) {
	var adds atomic.Int64
	reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(any) {
		if n := adds.Add(1); sample != nil && n%int64(max(pods/8, 1)) == 0 {
			sample()
		}
	}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced))
	if synced != nil {
		synced()
	}
	cancel()
	<-done
	require.Equal(t, int64(pods), adds.Load())
}

// liveHeapMetric reads /gc/heap/live:bytes, after a collection when gc.
func liveHeapMetric(gc bool) uint64 {
	if gc {
		runtime.GC()
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleLiveHeap samples the live heap every 2 ms until the returned stop,
// which returns the highest sample. When profile is named, each new high
// collects again and writes there the heap profile of that collection (a
// profile read without one can be two collections old).
func sampleLiveHeap(t *testing.T, profile string) (stop func() uint64) {
	var (
		wg   sync.WaitGroup
		peak uint64
	)
	quit := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if h := liveHeapMetric(false); h > peak {
				peak = h
				if profile != "" {
					runtime.GC()
					peak = max(peak, liveHeapMetric(false))
					writeLookupHeapProfile(t, profile)
				}
			}
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(quit)
		wg.Wait()
		return peak
	}
}

// writeLookupHeapProfile writes the heap profile to file, without a
// collection of its own.
func writeLookupHeapProfile(t *testing.T, file string) {
	f, err := os.Create(file)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, pprof.Lookup("heap").WriteTo(f, 0))
}

// hotObjectsEnv is CompactOptions.HotObjects from RESTART_PEAK_HOT,
// DefaultHotObjects when unset (0 turns the hot cache off).
func hotObjectsEnv() int {
	n, err := strconv.Atoi(os.Getenv("RESTART_PEAK_HOT"))
	if err != nil {
		return DefaultHotObjects
	}
	return n
}
