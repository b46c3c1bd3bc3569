package cache

import (
	"time"

	"k8s.io/utils/clock"
)

// The oldest-pending-age gauge of a handler is set when notifications are
// distributed or taken. A handler stuck inside one call while nothing new
// arrives would leave it frozen at its last value, so, while the metric is
// on and the handler is busy, a timer brings it up to date every
// lagRefreshInterval. The timer is armed when a batch is taken and lapses
// at the first tick that finds the handler idle: an idle handler, or one
// whose metric is off, costs nothing. Its callback is the only code run on
// the timer's goroutine; it takes l.mu alone and returns at once, and
// shutdown stops the timer.

// lagRefreshInterval is how often a busy handler's age gauge is refreshed.
const lagRefreshInterval = time.Second

// inFlight marks the value of processorListener.busy while a call runs; the
// low 32 bits are then the stamp of the notification being handled.
const inFlight = uint64(1) << 32

// markInFlight records that n is being handled, when the age metric is on.
func (l *processorListener) markInFlight(n *notification) {
	if l.metrics.enabled {
		l.busy.Store(inFlight | uint64(n.enqueued))
	}
}

// oldestLocked returns the stamp of the oldest notification not yet
// handled: the one in flight (known only while the age metric is on), else
// the oldest taken but not started, else the head of the queue. Delivery
// is in order, so the first of these that exists is the oldest.
func (l *processorListener) oldestLocked() (stamp, bool) {
	if b := l.busy.Load(); b&inFlight != 0 {
		return stamp(b), true
	}
	if l.waiting.Load() > 0 {
		return stamp(l.waitingSince.Load()), true
	}
	if front := l.pending.Front(); front != nil {
		return front.enqueued, true
	}
	return 0, false
}

// armLagRefreshLocked starts the refresh timer unless it runs. Called with
// l.mu held when a batch is taken.
func (l *processorListener) armLagRefreshLocked() {
	if !l.metrics.enabled || l.lagArmed {
		return
	}
	l.lagArmed = true
	if l.lagTimer == nil {
		l.lagTimer = afterFunc(l.cfg.clock, lagRefreshInterval, l.refreshLag)
		return
	}
	l.lagTimer.Reset(lagRefreshInterval)
}

// refreshLag is the timer's callback: it refreshes the lag of a busy
// handler and re-arms, or lets the timer lapse.
func (l *processorListener) refreshLag() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if isClosed(l.stop) || l.busy.Load()&inFlight == 0 {
		l.lagArmed = false
		return
	}
	now := l.cfg.clock.Since(l.cfg.epoch)
	if l.overflow == nil {
		l.observeLag(now)
	} else if oldest, ok := l.oldestLocked(); ok {
		l.metrics.oldestAge.Set(oldest.age(now).Seconds())
	}
	l.lagTimer.Reset(lagRefreshInterval)
}

// stopLagRefreshLocked stops the timer for good. Called with l.mu held.
func (l *processorListener) stopLagRefreshLocked() {
	if l.lagTimer != nil {
		l.lagTimer.Stop()
	}
	l.lagArmed = false
}

// afterFunc runs f after d on c, or on the real clock when c cannot (the
// ages it reports still come from c).
func afterFunc(c clock.Clock, d time.Duration, f func()) clock.Timer {
	if dc, ok := c.(clock.WithDelayedExecution); ok {
		return dc.AfterFunc(d, f)
	}
	return clock.RealClock{}.AfterFunc(d, f)
}
