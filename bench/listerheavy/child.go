package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// syncReport is one variant's start: from Start to every cache and the
// handler synced.
type syncReport struct {
	Variant string
	WallSec float64
	CPUSec  float64
}

// phaseReport is what one phase (updates, then idle) cost the process.
type phaseReport struct {
	CPUSec     float64
	AllocBytes uint64
	Work       workloadCounts
}

// finalReport is the workload process's memory and its phases.
type finalReport struct {
	Load, Idle phaseReport
	// PeakRSS is the process's maximum resident set (getrusage), sync
	// included; PeakHeap the highest heap in objects, garbage not yet
	// swept included, sampled every 10 ms from the start.
	PeakRSS, PeakHeap uint64
	// MeanLive is the mean live heap (as of the last GC) over the update
	// phase; SteadyLive the live heap after the idle phase and a forced GC.
	MeanLive, SteadyLive uint64
}

// runWorkload is the workload role: the variant's factory, the
// controllers, the sync reported; then the harness's "load", "idle" and
// "report" lines on stdin bound the phases measured.
func runWorkload(c config) error {
	cs, err := kubernetes.NewForConfig(clientConfig(c.host, c.token))
	if err != nil {
		return err
	}
	f, err := newFactory(c.variant, cs)
	if err != nil {
		return err
	}
	w := &work{}
	ctrl, reg, err := setUp(f, w)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sampler := startSampler(ctx)
	start, s0 := time.Now(), sample()
	f.Start(ctx.Done())
	for _, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache did not sync")
		}
	}
	for !reg.HasSynced() {
		time.Sleep(10 * time.Millisecond)
	}
	ctrl.run(ctx)
	if err := json.NewEncoder(os.Stdout).Encode(syncReport{Variant: c.variant,
		WallSec: time.Since(start).Seconds(), CPUSec: sample().cpu - s0.cpu}); err != nil {
		return err
	}
	prof := phaseProfile{dir: c.cpuProfile, name: fmt.Sprintf("%s-%d.pprof", c.variant, os.Getpid())}
	in := bufio.NewScanner(os.Stdin)
	var marks [3]counters
	var counts [3]workloadCounts
	for i, want := range []string{"load", "idle", "report"} {
		if !in.Scan() || in.Text() != want {
			return fmt.Errorf("expected %s, got %q", want, in.Text())
		}
		marks[i], counts[i] = sample(), w.snapshot()
		switch i {
		case 0:
			sampler.startMean()
			if err := prof.start(); err != nil {
				return err
			}
		case 1:
			sampler.stopMean()
			if err := prof.stop(); err != nil {
				return err
			}
		}
	}
	runtime.GC()
	runtime.GC()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	peak, mean := sampler.result()
	return json.NewEncoder(os.Stdout).Encode(finalReport{
		Load: phase(marks[0], marks[1], counts[0], counts[1]), Idle: phase(marks[1], marks[2], counts[1], counts[2]),
		PeakRSS: uint64(ru.Maxrss) * 1024, PeakHeap: peak, MeanLive: mean, SteadyLive: sample().live})
}

func phase(a, b counters, x, y workloadCounts) phaseReport {
	return phaseReport{CPUSec: b.cpu - a.cpu, AllocBytes: b.allocBytes - a.allocBytes,
		Work: workloadCounts{Events: y.Events - x.Events, Syncs: y.Syncs - x.Syncs, Lists: y.Lists - x.Lists, Listed: y.Listed - x.Listed}}
}

// counters are the process's CPU time and heap counters at one moment.
type counters struct {
	cpu              float64
	allocBytes, live uint64
}

func sample() counters {
	ms := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(ms)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return counters{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(),
		allocBytes: ms[0].Value.Uint64(), live: ms[1].Value.Uint64()}
}

// sampler follows the heap every 10 ms: its peak in objects from the start,
// and the mean live heap between startMean and stopMean.
type sampler struct {
	req chan func(*samplerState)
}

type samplerState struct {
	peak, sum, n uint64
	averaging    bool
}

func startSampler(ctx context.Context) *sampler {
	s := &sampler{req: make(chan func(*samplerState))}
	go func() {
		var st samplerState
		ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case fn := <-s.req:
				fn(&st)
			case <-t.C:
				metrics.Read(ms)
				st.peak = max(st.peak, ms[0].Value.Uint64())
				if st.averaging {
					st.sum += ms[1].Value.Uint64()
					st.n++
				}
			}
		}
	}()
	return s
}

func (s *sampler) startMean() { s.req <- func(st *samplerState) { st.averaging = true } }
func (s *sampler) stopMean()  { s.req <- func(st *samplerState) { st.averaging = false } }

func (s *sampler) result() (peak, mean uint64) {
	done := make(chan struct{})
	s.req <- func(st *samplerState) {
		peak = st.peak
		if st.n > 0 {
			mean = st.sum / st.n
		}
		close(done)
	}
	<-done
	return peak, mean
}

// phaseProfile is the CPU profile of the update phase, written to dir when
// dir is set.
type phaseProfile struct {
	dir, name string
	f         *os.File
}

func (p *phaseProfile) start() error {
	if p.dir == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(p.dir, p.name))
	if err != nil {
		return err
	}
	p.f = f
	return pprof.StartCPUProfile(f)
}

func (p *phaseProfile) stop() error {
	if p.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	return p.f.Close()
}
