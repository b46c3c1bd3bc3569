package fanout

import (
	"sync"
	"time"

	clientcache "k8s.io/client-go/tools/cache"
)

// The oldest-pending-age gauge of a handler is set when notifications are
// distributed or taken. A handler stuck inside one call while nothing new
// arrives would leave it frozen, so while the age metric is on, each
// listener's goroutine runs a lag refresher beside it that brings the gauge up
// to date every lagRefreshInterval. It takes the clock's time and timers
// with no lock held (a fake clock runs timer callbacks and sends under its own
// lock), then takes l.mu alone to read the queue and set the gauge. It ends
// when the listener's goroutine returns.

// lagRefreshInterval is how often the age gauge is brought up to date.
const lagRefreshInterval = time.Second

// inFlightMark flags listener.inFlight as set; the low 32 bits are
// then the stamp of the notification the handler is in.
const inFlightMark = uint64(1) << 32

// markInFlight records that n is being handled.
func (l *Listener) markInFlight(n *Notification) {
	l.inFlight.Store(inFlightMark | uint64(n.enqueued))
}

// oldestLocked returns the stamp of the oldest notification the handler has
// not finished: the one it is in, else the head of the queue. Delivery is
// in order, so the first that exists is the oldest. Called with l.mu held.
func (l *Listener) oldestLocked() (stamp, bool) {
	if f := l.inFlight.Load(); f&inFlightMark != 0 {
		return stamp(f), true
	}
	if front := l.pending.Front(); front != nil {
		return front.enqueued, true
	}
	return 0, false
}

// startLagRefresher runs refreshLag until the returned stop is called; stop
// waits for it to return.
func (l *Listener) startLagRefresher() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { l.refreshLag(done) })
	return func() {
		close(done)
		wg.Wait()
	}
}

// refreshLag refreshes the age gauge every lagRefreshInterval until done is
// closed.
func (l *Listener) refreshLag(done <-chan struct{}) {
	t := l.cfg.Clock.NewTimer(lagRefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C():
		}
		l.refreshAge(l.cfg.Clock.Since(l.cfg.epoch))
		t.Reset(lagRefreshInterval)
	}
}

// refreshAge sets the age gauge from the oldest unfinished notification at
// now. An idle or removed handler's gauge was zeroed by next or shutdown and
// is left alone.
func (l *Listener) refreshAge(now time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if oldest, ok := l.oldestLocked(); ok && !isClosed(l.stop) {
		l.metrics.OldestAge.Set(oldest.age(now).Seconds())
	}
}

// Metrics are one handler's lag metrics.
type Metrics struct {
	// Enabled is false when OldestAge discards what it is told: the clock
	// read per delivered batch and the lag refresher that feed it are then
	// skipped.
	Enabled bool
	// Pending counts the notifications waiting for the handler (for a
	// collapsed backlog: the keys to be resynced).
	Pending clientcache.GaugeMetric
	// OldestAge is the age in seconds of the oldest notification the
	// handler has not finished.
	OldestAge clientcache.GaugeMetric
	// Collapses counts the backlog's collapses into a resync.
	Collapses clientcache.CounterMetric
}

// idle records an empty backlog.
func (m Metrics) idle() {
	m.Pending.Set(0)
	m.OldestAge.Set(0)
}
