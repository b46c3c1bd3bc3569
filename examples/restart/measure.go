package main

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"time"
)

// heapMetric is the live and not yet swept heap: what a sampler sees of a
// start's peak.
const heapMetric = "/memory/classes/heap/objects:bytes"

// allocMetric is the bytes allocated since the process started.
const allocMetric = "/gc/heap/allocs:bytes"

// gcMetric is the runtime's estimate of the CPU its garbage collector
// used, in seconds, idle-time marking included: here it grows with the
// in-process fake server's heap, which a real client does not hold.
const gcMetric = "/cpu/classes/gc/total:cpu-seconds"

// heapSampleInterval is how often a start's heap is sampled for its peak.
const heapSampleInterval = time.Millisecond

// cost is what one informer start cost the process.
type cost struct {
	// sync is the time from Run to the handler registration's HasSynced:
	// every initial add delivered.
	sync time.Duration
	// informer is the cost until the informer's own HasSynced (its store
	// populated), which comes first: its sync, cpu and server only.
	informer *cost
	// cpu is the process's user and system CPU over the start, the fake
	// server's included; server is the part the wire measured as the
	// server's (listing and encoding).
	cpu, server time.Duration
	// sys is the system part of cpu: mostly page faults of a growing heap;
	// gc the runtime's estimate of its collector's CPU over the start.
	sys, gc time.Duration
	// allocated is the bytes allocated over the start.
	allocated uint64
	// peak and steady are the heap at its highest during the start and
	// after it, collected, each above the heap before it.
	peak, steady uint64
}

// client is the CPU the informer itself used: the process's minus the
// server's measured share.
func (c cost) client() time.Duration { return max(c.cpu-c.server, 0) }

// meter measures one start: begin before Run, end once synced.
type meter struct {
	base, allocs uint64
	cpu, sys, gc time.Duration
	began        time.Time
	stop         chan struct{}
	done         sync.WaitGroup
	peak         uint64
}

// startMeter collects the heap, so that the start's growth is measured from
// what is live, and starts sampling its peak on a goroutine that end stops.
func startMeter() *meter {
	runtime.GC()
	m := &meter{base: read(heapMetric), allocs: read(allocMetric), stop: make(chan struct{})}
	m.cpu, m.sys = processCPU()
	m.gc = gcCPU()
	m.peak = m.base
	m.done.Go(m.sample)
	m.began = time.Now()
	return m
}

func (m *meter) sample() {
	tick := time.NewTicker(heapSampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
			m.peak = max(m.peak, read(heapMetric))
		}
	}
}

// mark records the cost so far as the informer's, at its HasSynced.
func (m *meter) mark(serverNanos int64) *cost {
	cpu, _ := processCPU()
	return &cost{sync: time.Since(m.began), cpu: cpu - m.cpu, server: time.Duration(serverNanos)}
}

// end stops sampling and returns the start's cost; the steady heap is
// measured after a collection.
func (m *meter) end(serverNanos int64) cost {
	cpu, sys := processCPU()
	c := cost{sync: time.Since(m.began), cpu: cpu - m.cpu, sys: sys - m.sys, gc: gcCPU() - m.gc, server: time.Duration(serverNanos), allocated: read(allocMetric) - m.allocs}
	close(m.stop)
	m.done.Wait()
	m.peak = max(m.peak, read(heapMetric))
	runtime.GC()
	c.peak, c.steady = above(m.peak, m.base), above(read(heapMetric), m.base)
	return c
}

func above(v, base uint64) uint64 {
	if v < base {
		return 0
	}
	return v - base
}

func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: gcMetric}}
	metrics.Read(s)
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// processCPU is the user and system time the process has used, and the
// system time alone.
func processCPU() (total, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Duration(ru.Stime.Nano())
}

// waitSynced waits until every check passes or ctx ends, and reports which.
func waitSynced(ctx context.Context, checks ...func() bool) bool {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		ok := true
		for _, c := range checks {
			ok = ok && c()
		}
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}
