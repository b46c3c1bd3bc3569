package fanout

import (
	"sync"
	"sync/atomic"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/deque"
)

// handlerSyncTracker is a registration's sync state: synced once the
// informer has synced and every initial-list add queued to the handler has
// been delivered (returned or panicked).
type handlerSyncTracker struct {
	name     string
	pending  atomic.Int64
	upstream atomic.Bool
	once     sync.Once
	done     chan struct{}
}

func newHandlerSyncTracker(name string) *handlerSyncTracker {
	return &handlerSyncTracker{name: name, done: make(chan struct{})}
}

func (t *handlerSyncTracker) start() { t.pending.Add(1) }

func (t *handlerSyncTracker) finish(n int64) {
	if t.pending.Add(-n) == 0 && t.upstream.Load() {
		t.once.Do(func() { close(t.done) })
	}
}

// upstreamSynced must be called after the initial adds were start()ed.
func (t *handlerSyncTracker) upstreamSynced() {
	t.upstream.Store(true)
	if t.pending.Load() == 0 {
		t.once.Do(func() { close(t.done) })
	}
}

// Name implements DoneChecker.
func (t *handlerSyncTracker) Name() string { return t.name }

// Done implements DoneChecker.
func (t *handlerSyncTracker) Done() <-chan struct{} { return t.done }

// Listener relays notifications to one handler, in order, on its
// own goroutine. It is also the registration handle returned to callers.
//
// mu guards the queue (pending, overflow), the stop channel's closing and
// the warnings' rate limits; it is taken by the distributing side with the
// processor's lock held and by the listener's goroutine alone, and nothing
// is locked inside it. The resync bookkeeping belongs to the processor's
// lock; waiting and inFlight are atomics written by run without the lock.
type Listener struct {
	handler Handler
	name    string
	// logger carries the handler's name for our own warnings; panicLogger
	// is the registration's logger as given, which client-go reports a
	// handler's panic with, so the "Observed a panic" line matches it.
	logger      klog.Logger
	panicLogger klog.Logger
	cfg         *Config
	metrics     Metrics
	synced      *handlerSyncTracker

	// Resync bookkeeping, guarded by the processor's lock.
	requestedResync time.Duration
	resyncPeriod    time.Duration
	nextResync      time.Time
	syncing         bool
	started         bool

	wake chan struct{} // 1-buffered "the queue became non-empty"
	// stop is closed, under mu, once on removal or informer stop: the one
	// record that the handler must not be called again.
	stop     chan struct{}
	finished chan struct{} // closed when run returns (or at removal if never run)

	// waiting counts the notifications run has taken from pending but not
	// yet started: the pending count includes them. inFlight is
	// inFlightMark plus the stamp of the notification the handler is in,
	// or 0 (see lag.go): the lag includes it and so the taken
	// ones after it. run writes both without the lock, so that a batch
	// costs one lock; next sets inFlight under the lock when it takes a
	// batch and clears it when it finds none, so that it never reads 0
	// while taken notifications wait.
	waiting  atomic.Int64
	inFlight atomic.Uint64

	// pauseNext is set by run when a handler call panicked and the panic
	// was recovered: the next call waits panicPause first. Owned by run.
	pauseNext bool

	mu       sync.Mutex
	pending  deque.Blocks[Notification]
	overflow *backlogOverflow // non-nil while the backlog is collapsed
	// Rate limits for the two warnings, in processor time.
	lastWarn, lastCollapseLog time.Duration
	warned, collapseLogged    bool
}

// ListenerOptions describe one handler's listener.
type ListenerOptions struct {
	// Logger is the registration's logger.
	Logger  klog.Logger
	Handler Handler
	// Name names the handler in warnings and its sync checker.
	Name string
	// InformerChecker is the name of the informer's sync checker, which
	// the handler's extends.
	InformerChecker string
	// Requested is the resync period the handler asked for, Effective the
	// one it gets (EffectiveResyncPeriod).
	Requested, Effective time.Duration
	Metrics              Metrics
}

// NewListener returns a listener for o.Handler, to be added with
// AddListener; it is also the handler's registration handle.
func (p *Processor) NewListener(o ListenerOptions) *Listener {
	return &Listener{
		handler:         o.Handler,
		name:            o.Name,
		logger:          o.Logger.WithValues("handler", o.Name),
		panicLogger:     o.Logger,
		cfg:             &p.cfg,
		metrics:         o.Metrics,
		synced:          newHandlerSyncTracker(o.InformerChecker + " + event handler " + o.Name),
		requestedResync: o.Requested,
		resyncPeriod:    o.Effective,
		nextResync:      p.cfg.Clock.Now().Add(o.Effective),
		syncing:         true,
		wake:            make(chan struct{}, 1),
		stop:            make(chan struct{}),
		finished:        make(chan struct{}),
	}
}

// HasSynced reports whether the informer has synced and every initial-list
// add queued to this handler has been delivered.
func (l *Listener) HasSynced() bool { return isClosed(l.synced.done) }

// HasSyncedChecker returns a DoneChecker for HasSynced, to use with WaitFor.
func (l *Listener) HasSyncedChecker() clientcache.DoneChecker { return l.synced }

// ShutdownChan is closed once the handler will not be called any more.
func (l *Listener) ShutdownChan() <-chan struct{} { return l.finished }

// add queues ns for the handler, in order, under one lock: a batch costs
// the handler's goroutine one contended lock, not one per notification. A
// notification marked in sync (a resync) is queued only if the handler is
// due for one; sync may be nil. now is the distribution time.
func (l *Listener) add(ns []Notification, sync []bool, now time.Duration) {
	l.mu.Lock()
	if isClosed(l.stop) {
		l.mu.Unlock()
		return
	}
	wasIdle := l.pending.Len() == 0
	for i, n := range ns {
		if sync != nil && sync[i] && !l.syncing {
			continue
		}
		l.queueLocked(n, now)
	}
	// The lag is observed once per batch: every notification in it was
	// distributed at the same moment.
	if l.overflow == nil && l.pending.Len() > 0 {
		l.observeLag(now)
	}
	// Only a listener that may be idle needs waking: one whose queue just
	// became non-empty, or one with a collapsed backlog to resolve.
	wake := (wasIdle && l.pending.Len() > 0) || l.overflow != nil
	l.mu.Unlock()
	if wake {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

func (l *Listener) queueLocked(n Notification, now time.Duration) {
	if n.Kind == Add && n.Initial {
		n.tracked = true
		l.synced.start()
	}
	n.enqueued = stampAt(now)
	switch {
	case l.overflow != nil:
		l.recordLocked(n)
		l.metrics.Pending.Set(float64(len(l.overflow.keys)))
	case l.cfg.BacklogLimit > 0 && l.pending.Len() >= l.cfg.BacklogLimit:
		l.collapse(n, now)
	default:
		l.pending.PushBack(n)
	}
}

// observeLag updates the lag metrics and warns, at most once per interval,
// when the oldest pending notification is older than the threshold. Called
// with l.mu held, on the distributing side, so a handler stuck inside a call
// is still reported.
func (l *Listener) observeLag(now time.Duration) {
	oldest, _ := l.oldestLocked() // the queue is not empty
	age, pending := oldest.age(now), l.pending.Len()+int(l.waiting.Load())
	l.metrics.Pending.Set(float64(pending))
	l.metrics.OldestAge.Set(age.Seconds())
	threshold := l.cfg.SlowThreshold
	if threshold <= 0 || age < threshold || (l.warned && now-l.lastWarn < slowHandlerWarnInterval) {
		return
	}
	l.warned, l.lastWarn = true, now
	l.logger.Info("Warning: event handler is lagging behind", "pendingNotifications", pending, "oldestPendingAge", age)
}

// listenerBatch notifications are taken from the queue per lock. The
// distributing side, which is usually the informer's bottleneck, then
// rarely finds the lock held, in particular not by a thread the OS has just
// preempted.
const listenerBatch = 64

// run delivers notifications until the listener is stopped.
func (l *Listener) run() {
	defer close(l.finished)
	if l.metrics.Enabled {
		defer l.startLagRefresher()()
	}
	var batch [listenerBatch]Notification
	for {
		n, state := l.next(batch[:])
		switch state {
		case listenerStopped:
			return
		case listenerIdle:
			select {
			case <-l.wake:
			case <-l.stop:
				return
			}
		case listenerOverflowed:
			l.deliverResync()
		default:
			if !l.deliverAll(batch[:n]) {
				return
			}
		}
	}
}

type listenerState uint8

const (
	listenerReady listenerState = iota
	listenerIdle
	listenerOverflowed
	listenerStopped
)

// next moves up to len(dst) queued notifications into dst.
func (l *Listener) next(dst []Notification) (int, listenerState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if isClosed(l.stop) {
		return 0, listenerStopped
	}
	if n := l.pending.PopFrontInto(dst); n > 0 {
		l.markInFlight(&dst[0])
		l.metrics.Pending.Set(float64(l.pending.Len() + n - 1))
		if l.metrics.Enabled {
			l.metrics.OldestAge.Set(dst[0].enqueued.age(l.cfg.Clock.Since(l.cfg.epoch)).Seconds())
		}
		return n, listenerReady
	}
	l.inFlight.Store(0)
	if l.overflow != nil {
		return 0, listenerOverflowed
	}
	l.metrics.idle()
	return 0, listenerIdle
}

// deliverAll delivers ns in order, zeroing each entry so the batch buffer
// pins nothing. It stops, returning false, once the listener is removed: a
// removed handler is not called again, whatever it had queued.
func (l *Listener) deliverAll(ns []Notification) bool {
	for i := range ns {
		if !l.pauseAfterPanic() {
			clear(ns)
			return false
		}
		l.markWaiting(ns[i+1:])
		l.markInFlight(&ns[i])
		l.pauseNext = !l.deliver(ns[i])
		ns[i] = Notification{}
	}
	return true
}

// panicPause is how long delivery waits after a handler's recovered panic
// before the next call, as client-go's listener does: a handler that
// panics on every notification then logs one panic a second instead of
// flooding the log, and client-go's own tests hold it to that.
const panicPause = time.Second

// pauseAfterPanic waits panicPause if the last call panicked. It returns
// false, at once, if the listener is or gets removed.
func (l *Listener) pauseAfterPanic() bool {
	if !l.pauseNext {
		return !l.isRemoved()
	}
	l.pauseNext = false
	t := l.cfg.Clock.NewTimer(panicPause)
	defer t.Stop()
	select {
	case <-l.stop:
		return false
	case <-t.C():
		return true
	}
}

// markWaiting records rest, the taken notifications not yet started.
func (l *Listener) markWaiting(rest []Notification) {
	l.waiting.Store(int64(len(rest)))
}

// deliver calls the handler and reports whether the call returned. A
// panic is handled as client-go does, by utilruntime.HandleCrashWithLogger:
// logged where it happened, passed to utilruntime.PanicHandlers and
// re-raised when utilruntime.ReallyCrash is true (the default), crashing
// the process. With ReallyCrash false the notification is skipped and
// delivery continues after panicPause, and an initial-list add counts as
// delivered either way, so a panicking OnAdd cannot keep the registration
// unsynced forever. A boxed object is read back first (see form.Box, held.go), under
// the same recovery; one that cannot be is not delivered, but an initial
// add counts as delivered all the same.
func (l *Listener) deliver(n Notification) (returned bool) {
	if n.tracked {
		defer l.synced.finish(1)
	}
	defer utilruntime.HandleCrashWithLogger(l.panicLogger)
	if n.readBack() {
		n.CallOn(l.handler)
	}
	return true
}

// isRemoved reports whether the handler must not be called any more.
func (l *Listener) isRemoved() bool { return isClosed(l.stop) }

// shutdown stops delivery and drops what is pending; an in-flight handler
// call finishes on its own.
func (l *Listener) shutdown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if isClosed(l.stop) {
		return
	}
	close(l.stop)
	l.pending = deque.Blocks[Notification]{}
	l.overflow = nil
	l.metrics.idle()
}

// shouldResync reports whether the listener is due for a resync at now and,
// if so, schedules the next one. Called with the processor lock held.
func (l *Listener) shouldResync(now time.Time) bool {
	if l.resyncPeriod == 0 || now.Before(l.nextResync) {
		return false
	}
	l.nextResync = now.Add(l.resyncPeriod)
	return true
}
