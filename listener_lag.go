package cache

import (
	"sync"
	"time"
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

// inFlightMark flags processorListener.inFlight as set; the low 32 bits are
// then the stamp of the notification the handler is in.
const inFlightMark = uint64(1) << 32

// markInFlight records that n is being handled.
func (l *processorListener) markInFlight(n *notification) {
	l.inFlight.Store(inFlightMark | uint64(n.enqueued))
}

// oldestLocked returns the stamp of the oldest notification the handler has
// not finished: the one it is in, else the head of the queue. Delivery is
// in order, so the first that exists is the oldest. Called with l.mu held.
func (l *processorListener) oldestLocked() (stamp, bool) {
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
func (l *processorListener) startLagRefresher() (stop func()) {
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
func (l *processorListener) refreshLag(done <-chan struct{}) {
	t := l.cfg.clock.NewTimer(lagRefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C():
		}
		l.refreshAge(l.cfg.clock.Since(l.cfg.epoch))
		t.Reset(lagRefreshInterval)
	}
}

// refreshAge sets the age gauge from the oldest unfinished notification at
// now. An idle or removed handler's gauge was zeroed by next or shutdown and
// is left alone.
func (l *processorListener) refreshAge(now time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if oldest, ok := l.oldestLocked(); ok && !isClosed(l.stop) {
		l.metrics.oldestAge.Set(oldest.age(now).Seconds())
	}
}
