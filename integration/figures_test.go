package integration

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/openinformer/cache/integration/apiserver"
)

// figures are one informer's costs for the same workload.
type figures struct {
	name     string
	syncTime time.Duration
	peakHeap uint64 // heap growth at its highest while syncing
	retained uint64 // heap growth after sync and a GC
	requests map[string]int
}

// TestResourceFigures runs each implementation alone over the same widgets,
// several rounds in alternating order, and prints the best of each figure
// side by side. The API server shares the process, so heap figures include
// its side of serving the informer: read them as rough.
func TestResourceFigures(t *testing.T) {
	expectOurGoroutinesGone(t)
	const payload, rounds = 512, 3
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	client := srv.Dynamic()
	workload{namespaces: testNamespaces, prefix: "fig", objects: scaled(1000), writers: 8, payload: payload}.run(t, client)
	want := serverState(t, client)

	best := make([]figures, len(implementations))
	for round := range rounds {
		for i := range implementations {
			if round%2 == 1 {
				i = len(implementations) - 1 - i
			}
			f := measure(t, srv, client, implementations[i])
			if round == 0 {
				best[i] = f
			} else {
				best[i] = best[i].best(f)
			}
		}
	}
	t.Logf("%d widgets, %d-byte payload each; best of %d rounds", len(want), payload, rounds)
	for _, f := range best {
		t.Logf("%-16s sync %-12v peak heap +%-8s retained +%-8s requests %v",
			f.name, f.syncTime.Round(time.Millisecond), mib(f.peakHeap), mib(f.retained), f.requests)
	}
	ref := best[0]
	for _, f := range best[1:] {
		t.Logf("%s/%s: sync %.2f, peak heap %.2f, retained heap %.2f, requests %s",
			f.name, ref.name,
			ratio(float64(f.syncTime), float64(ref.syncTime)),
			ratio(float64(f.peakHeap), float64(ref.peakHeap)),
			ratio(float64(f.retained), float64(ref.retained)),
			requestRatios(f.requests, ref.requests))
	}
}

// measure starts impl's informer alone, takes its figures once it has
// converged, and stops it.
func measure(t *testing.T, srv *apiserver.Server, client dynamic.Interface, impl implementation) figures {
	t.Helper()
	runtime.GC()
	base := heapAlloc()
	peak := watchPeakHeap()
	run := startInformer(t, srv, impl)
	peakHeap := growth(peak(), base)
	waitConverged(t, client, []*informerRun{run})
	runtime.GC()
	retained := growth(heapAlloc(), base)
	counts, _ := run.probe.snapshot()
	run.stop()
	return figures{name: impl.name, syncTime: run.syncTime, peakHeap: peakHeap, retained: retained, requests: counts}
}

// best keeps the lowest of each figure.
func (f figures) best(g figures) figures {
	f.syncTime = min(f.syncTime, g.syncTime)
	f.peakHeap = min(f.peakHeap, g.peakHeap)
	f.retained = min(f.retained, g.retained)
	return f
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// watchPeakHeap samples the heap every 10ms until the returned function is
// called, which stops sampling and returns the highest value seen.
func watchPeakHeap() func() uint64 {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var peak uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(10 * time.Millisecond)
		defer ticker.Stop()
		for {
			peak = max(peak, heapAlloc())
			select {
			case <-stop:
				return
			case <-ticker.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		wg.Wait()
		return peak
	}
}

func growth(now, base uint64) uint64 { return now - min(now, base) }

func mib(b uint64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func requestRatios(got, ref map[string]int) string {
	var out []string
	for _, kind := range []string{kindList, kindWatchList, kindWatch} {
		if got[kind] == 0 && ref[kind] == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s %d/%d", kind, got[kind], ref[kind]))
	}
	return strings.Join(out, ", ")
}
