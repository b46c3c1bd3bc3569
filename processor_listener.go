package cache

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// How a shared informer hands notifications to its handlers.
//
// Every handler (processorListener) owns one goroutine and a growable queue
// guarded by a mutex. The informer appends to the queue (a whole batch under
// one lock) and, only when the queue was empty, pokes a 1-buffered channel;
// the goroutine takes up to listenerBatch notifications per lock and calls
// the handler with each in turn. So a notification costs no channel
// operation while the handler is busy and at most one when it is idle,
// against client-go's three goroutines and two channel hops per
// notification. Per handler, notifications arrive in distribution order;
// handlers never wait for each other.

const (
	// minimumResyncPeriod is the smallest per-handler resync period honoured.
	minimumResyncPeriod = time.Second
	// defaultSlowHandlerThreshold is how old the oldest pending notification
	// of a handler may get before the handler is reported as lagging.
	defaultSlowHandlerThreshold = 10 * time.Second
	// slowHandlerWarnInterval rate-limits the lagging-handler warning per handler.
	slowHandlerWarnInterval = time.Minute
	// notificationChunk is how many notifications a listener takes under
	// one lock when many arrive at once (a relist, a late handler's initial
	// adds), so that its handler is not kept waiting for the whole lot.
	notificationChunk = 1024
)

// HandlerMetricsProvider builds the per-handler lag metrics of shared
// informers. id is the informer's identity (possibly unreserved and empty)
// and handler the handler's name, as used in log messages.
type HandlerMetricsProvider interface {
	// NewPendingNotificationsMetric tracks how many notifications wait for
	// the handler (for a collapsed backlog: how many keys are to be resynced).
	NewPendingNotificationsMetric(id InformerNameAndResource, handler string) GaugeMetric
	// NewOldestPendingAgeMetric tracks the age in seconds of the oldest
	// notification waiting for the handler.
	NewOldestPendingAgeMetric(id InformerNameAndResource, handler string) GaugeMetric
	// NewBacklogCollapsesMetric counts how often the handler's backlog hit
	// its bound and was collapsed into a resync.
	NewBacklogCollapsesMetric(id InformerNameAndResource, handler string) CounterMetric
}

var handlerMetrics struct {
	once     sync.Once
	provider HandlerMetricsProvider
}

// SetHandlerMetricsProvider installs the process-wide HandlerMetricsProvider
// for informers whose options name none. Only the first call has an effect.
func SetHandlerMetricsProvider(p HandlerMetricsProvider) {
	handlerMetrics.once.Do(func() { handlerMetrics.provider = p })
}

// listenerMetrics are one handler's lag metrics; enabled is false when
// nobody listens, which saves a clock read per delivered notification.
type listenerMetrics struct {
	enabled   bool
	pending   GaugeMetric
	oldestAge GaugeMetric
	collapses CounterMetric
}

func newListenerMetrics(p HandlerMetricsProvider, id InformerNameAndResource, handler string) listenerMetrics {
	if p == nil {
		p = handlerMetrics.provider
	}
	if p == nil {
		return listenerMetrics{pending: noopMetric{}, oldestAge: noopMetric{}, collapses: noopMetric{}}
	}
	return listenerMetrics{
		enabled:   true,
		pending:   p.NewPendingNotificationsMetric(id, handler),
		oldestAge: p.NewOldestPendingAgeMetric(id, handler),
		collapses: p.NewBacklogCollapsesMetric(id, handler),
	}
}

type notificationKind uint8

const (
	addNotification notificationKind = iota
	updateNotification
	deleteNotification
)

// notification is one handler call waiting to happen. Kept by value in the
// queue, so distributing it allocates nothing.
type notification struct {
	oldObj, newObj interface{}
	kind           notificationKind
	// initial is the isInInitialList flag of an add.
	initial bool
	// tracked marks an initial add counted in the handler's sync tracker.
	tracked bool
	// enqueued is when it was distributed.
	enqueued stamp
}

// stamp is a distribution time in milliseconds since the processor's
// epoch, in 32 bits: a lagging handler's backlog is mostly notifications,
// and this keeps each at 40 bytes instead of 48. It wraps after about 49
// days; ages are computed modulo that, so they stay right for anything
// younger.
type stamp uint32

// stampAt is the stamp of now, a time since the processor's epoch.
func stampAt(now time.Duration) stamp { return stamp(now / time.Millisecond) }

// age is how long before now s was taken.
func (s stamp) age(now time.Duration) time.Duration {
	return time.Duration(stampAt(now)-s) * time.Millisecond
}

// notificationQueue is a FIFO of notifications in a chain of fixed-size
// blocks. A lagging handler's backlog grows a block at a time, so nothing is
// ever copied or zeroed twice, and consumed blocks are freed as the handler
// catches up. Up to maxSpareBlocks consumed blocks are kept for reuse, so a
// handler that trails the informer by a batch or so allocates nothing.
type notificationQueue struct {
	head, tail *notificationBlock
	// first is the index of the oldest notification in head, next the
	// free index in tail.
	first, next int
	n           int
	// spare is a chain of emptied blocks, nspare long.
	spare  *notificationBlock
	nspare int
}

// notificationBlockSize notifications (40 bytes each) fill one block.
const notificationBlockSize = 128

// maxSpareBlocks spare blocks hold one of the informer's notification
// chunks: about 40 KB per listener at most.
const maxSpareBlocks = notificationChunk / notificationBlockSize

type notificationBlock struct {
	items [notificationBlockSize]notification
	next  *notificationBlock
}

func (r *notificationQueue) len() int { return r.n }

func (r *notificationQueue) push(x notification) {
	switch {
	case r.tail == nil:
		r.head = r.newBlock()
		r.tail = r.head
	case r.next == notificationBlockSize:
		r.tail.next = r.newBlock()
		r.tail, r.next = r.tail.next, 0
	}
	r.tail.items[r.next] = x
	r.next++
	r.n++
}

func (r *notificationQueue) newBlock() *notificationBlock {
	b := r.spare
	if b == nil {
		return &notificationBlock{}
	}
	r.spare, b.next = b.next, nil
	r.nspare--
	return b
}

func (r *notificationQueue) pop() (notification, bool) {
	if r.n == 0 {
		return notification{}, false
	}
	x := r.head.items[r.first]
	r.head.items[r.first] = notification{} // drop references for the GC
	r.first++
	r.n--
	r.advance()
	return x, true
}

// advance rewinds an emptied queue to its head block, or moves past a
// consumed head block, keeping it as a spare if there is room.
func (r *notificationQueue) advance() {
	switch {
	case r.n == 0:
		r.tail, r.first, r.next = r.head, 0, 0
	case r.first == notificationBlockSize:
		done := r.head
		r.head, r.first = done.next, 0
		if r.nspare < maxSpareBlocks {
			done.next = r.spare
			r.spare = done
			r.nspare++
		}
	}
}

// popInto moves up to len(dst) notifications into dst and returns how
// many, a block's run at a time.
func (r *notificationQueue) popInto(dst []notification) int {
	n := 0
	for n < len(dst) && r.n > 0 {
		end := notificationBlockSize
		if r.head == r.tail {
			end = r.next
		}
		run := r.head.items[r.first:min(end, r.first+len(dst)-n)]
		copy(dst[n:], run)
		clear(run)
		n += len(run)
		r.n -= len(run)
		r.first += len(run)
		r.advance()
	}
	return n
}

func (r *notificationQueue) peek() *notification {
	if r.n == 0 {
		return nil
	}
	return &r.head.items[r.first]
}

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

// cacheView is what a listener needs to turn a collapsed backlog into a
// resync: the informer's cache, the lock that orders cache writes with
// distribution, and the cache's key function.
type cacheView struct {
	distribution sync.Locker
	store        Store
	keyFunc      KeyFunc
}

// listenerConfig is what a sharedProcessor gives every listener.
type listenerConfig struct {
	clock         clock.Clock
	epoch         time.Time
	view          *cacheView
	backlogLimit  int
	slowThreshold time.Duration
	metrics       HandlerMetricsProvider
	id            InformerNameAndResource
}

// processorListener relays notifications to one handler, in order, on its
// own goroutine. It is also the registration handle returned to callers.
type processorListener struct {
	handler ResourceEventHandler
	name    string
	// logger carries the handler's name for our own warnings; panicLogger
	// is the registration's logger as given, which client-go reports a
	// handler's panic with, so the "Observed a panic" line matches it.
	logger      klog.Logger
	panicLogger klog.Logger
	cfg         *listenerConfig
	metrics     listenerMetrics
	synced      *handlerSyncTracker

	// Resync bookkeeping, guarded by the processor's lock.
	requestedResync time.Duration
	resyncPeriod    time.Duration
	nextResync      time.Time
	syncing         bool
	started         bool

	wake     chan struct{} // 1-buffered "the queue became non-empty"
	stop     chan struct{} // closed once on removal or informer stop
	finished chan struct{} // closed when run returns (or at removal if never run)

	// waiting counts the notifications run has taken from pending but not
	// yet started, and waitingSince is when the oldest of them was
	// distributed: the lag seen by add includes them. Written by run
	// without the lock, so that a batch costs one lock.
	waiting      atomic.Int64
	waitingSince atomic.Uint32

	mu       sync.Mutex
	pending  notificationQueue
	overflow *backlogOverflow // non-nil while the backlog is collapsed
	removed  bool
	// Rate limits for the two warnings, in processor time.
	lastWarn, lastCollapseLog time.Duration
	warned, collapseLogged    bool
}

func newProcessorListener(logger klog.Logger, h ResourceEventHandler, requested, effective time.Duration, now time.Time, cfg *listenerConfig, informerChecker string) *processorListener {
	name := eventHandlerName(h)
	return &processorListener{
		handler:         h,
		name:            name,
		logger:          logger.WithValues("handler", name),
		panicLogger:     logger,
		cfg:             cfg,
		metrics:         newListenerMetrics(cfg.metrics, cfg.id, name),
		synced:          newHandlerSyncTracker(informerChecker + " + event handler " + name),
		requestedResync: requested,
		resyncPeriod:    effective,
		nextResync:      now.Add(effective),
		syncing:         true,
		wake:            make(chan struct{}, 1),
		stop:            make(chan struct{}),
		finished:        make(chan struct{}),
	}
}

// HasSynced reports whether the informer has synced and every initial-list
// add queued to this handler has been delivered.
func (l *processorListener) HasSynced() bool { return IsDone(l.synced) }

// HasSyncedChecker returns a DoneChecker for HasSynced, to use with WaitFor.
func (l *processorListener) HasSyncedChecker() DoneChecker { return l.synced }

// ShutdownChan is closed once the handler will not be called any more.
func (l *processorListener) ShutdownChan() <-chan struct{} { return l.finished }

// add queues ns for the handler, in order, under one lock: a batch costs
// the handler's goroutine one contended lock, not one per notification. A
// notification marked in sync (a resync) is queued only if the handler is
// due for one; sync may be nil. now is the distribution time.
func (l *processorListener) add(ns []notification, sync []bool, now time.Duration) {
	l.mu.Lock()
	if l.removed {
		l.mu.Unlock()
		return
	}
	wasIdle := l.pending.len() == 0
	for i, n := range ns {
		if sync != nil && sync[i] && !l.syncing {
			continue
		}
		l.queueLocked(n, now)
	}
	// The lag is observed once per batch: every notification in it was
	// distributed at the same moment.
	if l.overflow == nil && l.pending.len() > 0 {
		l.observeLag(now)
	}
	// Only a listener that may be idle needs waking: one whose queue just
	// became non-empty, or one with a collapsed backlog to resolve.
	wake := (wasIdle && l.pending.len() > 0) || l.overflow != nil
	l.mu.Unlock()
	if wake {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

func (l *processorListener) queueLocked(n notification, now time.Duration) {
	if n.kind == addNotification && n.initial {
		n.tracked = true
		l.synced.start()
	}
	n.enqueued = stampAt(now)
	switch {
	case l.overflow != nil:
		l.overflow.record(l, n)
		l.metrics.pending.Set(float64(len(l.overflow.prior)))
	case l.cfg.backlogLimit > 0 && l.pending.len() >= l.cfg.backlogLimit:
		l.collapse(n, now)
	default:
		l.pending.push(n)
	}
}

// observeLag updates the lag metrics and warns, at most once per interval,
// when the oldest pending notification is older than the threshold. Called
// with l.mu held, on the distributing side, so a handler stuck inside a call
// is still reported.
func (l *processorListener) observeLag(now time.Duration) {
	oldest, waiting := l.pending.peek().enqueued, int(l.waiting.Load())
	if waiting > 0 {
		oldest = stamp(l.waitingSince.Load())
	}
	age, pending := oldest.age(now), l.pending.len()+waiting
	l.metrics.pending.Set(float64(pending))
	l.metrics.oldestAge.Set(age.Seconds())
	threshold := l.cfg.slowThreshold
	if threshold <= 0 || age < threshold || (l.warned && now-l.lastWarn < slowHandlerWarnInterval) {
		return
	}
	l.warned, l.lastWarn = true, now
	l.logger.Info("Warning: event handler is lagging behind", "pendingNotifications", pending, "oldestPendingAge", age)
}

// collapse replaces the full backlog by the set of keys it touched, see
// backlogOverflow. Every collapse is counted; the warning is logged at most
// once per interval, since a handler that stays slow collapses repeatedly.
// Called with l.mu held; now is the distribution time.
func (l *processorListener) collapse(n notification, now time.Duration) {
	ov := &backlogOverflow{prior: map[string]priorState{}}
	for {
		old, ok := l.pending.pop()
		if !ok {
			break
		}
		ov.record(l, old)
	}
	ov.record(l, n)
	l.pending = notificationQueue{}
	l.overflow = ov
	l.metrics.collapses.Inc()
	l.metrics.pending.Set(float64(len(ov.prior)))
	if l.collapseLogged && now-l.lastCollapseLog < slowHandlerWarnInterval {
		return
	}
	l.collapseLogged, l.lastCollapseLog = true, now
	l.logger.Info("Warning: event handler backlog reached its limit; it will get a resync of the current cache state instead",
		"limit", l.cfg.backlogLimit, "keys", len(ov.prior))
}

// listenerBatch notifications are taken from the queue per lock. The
// distributing side, which is usually the informer's bottleneck, then
// rarely finds the lock held, in particular not by a thread the OS has just
// preempted.
const listenerBatch = 64

// run delivers notifications until the listener is stopped.
func (l *processorListener) run() {
	defer close(l.finished)
	var batch [listenerBatch]notification
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
func (l *processorListener) next(dst []notification) (int, listenerState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.removed {
		return 0, listenerStopped
	}
	if n := l.pending.popInto(dst); n > 0 {
		l.metrics.pending.Set(float64(l.pending.len() + n - 1))
		if l.metrics.enabled {
			l.metrics.oldestAge.Set(dst[0].enqueued.age(l.cfg.clock.Since(l.cfg.epoch)).Seconds())
		}
		return n, listenerReady
	}
	if l.overflow != nil {
		return 0, listenerOverflowed
	}
	l.metrics.pending.Set(0)
	l.metrics.oldestAge.Set(0)
	return 0, listenerIdle
}

// deliverAll delivers ns in order, zeroing each entry so the batch buffer
// pins nothing. It stops, returning false, once the listener is removed: a
// removed handler is not called again, whatever it had queued.
func (l *processorListener) deliverAll(ns []notification) bool {
	for i := range ns {
		select {
		case <-l.stop:
			clear(ns)
			return false
		default:
		}
		l.markWaiting(ns[i+1:])
		l.deliver(ns[i])
		ns[i] = notification{}
	}
	return true
}

// markWaiting records rest, the taken notifications not yet started.
func (l *processorListener) markWaiting(rest []notification) {
	if len(rest) > 0 {
		l.waitingSince.Store(uint32(rest[0].enqueued))
	}
	l.waiting.Store(int64(len(rest)))
}

// deliver calls the handler. A panic is handled as client-go does, by
// utilruntime.HandleCrashWithLogger: logged where it happened, passed to
// utilruntime.PanicHandlers and re-raised when utilruntime.ReallyCrash is
// true (the default), crashing the process. With ReallyCrash false the
// notification is skipped and delivery continues at once (client-go pauses
// a second), and an initial-list add counts as delivered either way, so a
// panicking OnAdd cannot keep the registration unsynced forever.
func (l *processorListener) deliver(n notification) {
	if n.tracked {
		defer l.synced.finish(1)
	}
	defer utilruntime.HandleCrashWithLogger(l.panicLogger)
	switch n.kind {
	case addNotification:
		l.handler.OnAdd(n.newObj, n.initial)
	case updateNotification:
		l.handler.OnUpdate(n.oldObj, n.newObj)
	case deleteNotification:
		l.handler.OnDelete(n.oldObj)
	}
}

// deliverResync turns the collapsed backlog into one notification per
// touched key and delivers them, stopping early if the listener is removed.
func (l *processorListener) deliverResync() {
	notes, initialOutstanding := l.resolveOverflow()
	defer l.synced.finish(initialOutstanding)
	for _, n := range notes {
		if l.isRemoved() {
			return
		}
		l.deliver(n)
	}
}

func (l *processorListener) isRemoved() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.removed
}

// resolveOverflow snapshots the current cache state of the collapsed keys.
// The distribution lock keeps cache writes out while the overflow is taken
// and read, so everything queued afterwards follows the snapshot in order.
func (l *processorListener) resolveOverflow() ([]notification, int64) {
	view := l.cfg.view
	view.distribution.Lock()
	defer view.distribution.Unlock()
	l.mu.Lock()
	ov := l.overflow
	l.overflow = nil
	l.mu.Unlock()
	if ov == nil {
		return nil, 0
	}
	return ov.reconcile(view.store), ov.initialOutstanding
}

// shutdown stops delivery and drops what is pending; an in-flight handler
// call finishes on its own.
func (l *processorListener) shutdown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.removed {
		return
	}
	l.removed = true
	l.pending = notificationQueue{}
	l.overflow = nil
	l.metrics.pending.Set(0)
	l.metrics.oldestAge.Set(0)
	close(l.stop)
}

// shouldResync reports whether the listener is due for a resync at now and,
// if so, schedules the next one. Called with the processor lock held.
func (l *processorListener) shouldResync(now time.Time) bool {
	if l.resyncPeriod == 0 || now.Before(l.nextResync) {
		return false
	}
	l.nextResync = now.Add(l.resyncPeriod)
	return true
}

// priorState is what a handler held for a key before the first notification
// that a collapse discarded. When that notification was a delete, the
// handler held the deleted object, so the delete itself is kept.
type priorState struct {
	obj      interface{}
	present  bool
	initial  bool
	deletion interface{}
}

// backlogOverflow is a collapsed backlog. Instead of the notifications it
// keeps, per key they touched, the state the handler last saw. Its memory is
// bounded by the number of distinct keys, not by the number of events.
type backlogOverflow struct {
	prior map[string]priorState
	// initialOutstanding counts discarded initial-list adds whose sync
	// tracking is settled once the resync was delivered.
	initialOutstanding int64
}

// record notes the key of n and, on first sight, what the handler held
// before n.
func (o *backlogOverflow) record(l *processorListener, n notification) {
	if n.tracked {
		o.initialOutstanding++
	}
	obj := n.newObj
	if n.kind == deleteNotification {
		obj = n.oldObj
	}
	key, err := l.cfg.view.keyFunc(obj)
	if err != nil {
		// The cache could not have stored such an object either.
		utilruntime.HandleErrorWithLogger(l.logger, err, "Dropping notification without a key from a collapsed backlog")
		return
	}
	if _, seen := o.prior[key]; seen {
		return
	}
	switch n.kind {
	case addNotification:
		o.prior[key] = priorState{initial: n.initial}
	case updateNotification:
		o.prior[key] = priorState{obj: n.oldObj, present: true}
	case deleteNotification:
		o.prior[key] = priorState{present: true, deletion: n.oldObj}
	}
}

// reconcile compares what the handler held with the cache, key by key in
// sorted order. A key whose first dropped notification was a delete gets
// that delete, followed by an add if the key exists again. Otherwise:
// present before and now → update from the old to the current object;
// only now → add; only before → delete with a DeletedFinalStateUnknown
// tombstone holding the old object (the final state was not observed).
func (o *backlogOverflow) reconcile(store Store) []notification {
	keys := make([]string, 0, len(o.prior))
	for k := range o.prior {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	notes := make([]notification, 0, len(keys))
	for _, k := range keys {
		before := o.prior[k]
		cur, exists, _ := store.GetByKey(k)
		switch {
		case before.deletion != nil:
			notes = append(notes, notification{kind: deleteNotification, oldObj: before.deletion})
			if exists {
				notes = append(notes, notification{kind: addNotification, newObj: cur})
			}
		case exists && before.present:
			notes = append(notes, notification{kind: updateNotification, oldObj: before.obj, newObj: cur})
		case exists:
			notes = append(notes, notification{kind: addNotification, newObj: cur, initial: before.initial})
		case before.present:
			notes = append(notes, notification{kind: deleteNotification, oldObj: DeletedFinalStateUnknown{Key: k, Obj: before.obj}})
		}
	}
	return notes
}

// sharedProcessor fans notifications out to the listeners of one informer.
// Sync notifications (resyncs, relists of unchanged objects) only go to the
// listeners currently marked as syncing.
type sharedProcessor struct {
	cfg *listenerConfig

	mu        sync.RWMutex
	listeners []*processorListener
	running   bool
	stopped   bool
	synced    bool
	wg        sync.WaitGroup
}

func newSharedProcessor(cfg *listenerConfig) *sharedProcessor {
	if cfg.clock == nil {
		cfg.clock = clock.RealClock{}
	}
	cfg.epoch = cfg.clock.Now()
	return &sharedProcessor{cfg: cfg}
}

// addListener registers l and queues initial as its initial-list adds, all
// under the processor lock so that no notification can slip in between and
// the informer's sync cannot be reported to l before its initial list is
// counted. It reports whether the processor was already running.
func (p *sharedProcessor) addListener(l *processorListener, initial []interface{}) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		l.shutdown()
		close(l.finished)
		return false
	}
	p.listeners = append(p.listeners, l)
	if len(initial) > 0 {
		now := p.cfg.clock.Since(p.cfg.epoch)
		chunk := make([]notification, 0, min(len(initial), notificationChunk))
		for i, obj := range initial {
			chunk = append(chunk, notification{kind: addNotification, newObj: obj, initial: true})
			if len(chunk) == cap(chunk) || i == len(initial)-1 {
				l.add(chunk, nil, now)
				chunk = chunk[:0]
			}
		}
	}
	if p.synced {
		l.synced.upstreamSynced()
	}
	if p.running {
		p.startLocked(l)
	}
	return p.running
}

func (p *sharedProcessor) startLocked(l *processorListener) {
	l.started = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		l.run()
	}()
}

// removeListener stops and forgets the listener behind handle. Unknown or
// already removed handles are ignored.
func (p *sharedProcessor) removeListener(handle ResourceEventHandlerRegistration) error {
	l, ok := handle.(*processorListener)
	if !ok {
		return fmt.Errorf(invalidHandleFormat, handle)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.listeners {
		if x == l {
			p.listeners = append(p.listeners[:i:i], p.listeners[i+1:]...)
			l.shutdown()
			if !l.started {
				close(l.finished)
			}
			return nil
		}
	}
	return nil
}

// invalidHandleFormat reproduces client-go's error text for a foreign
// handle, verbs included; a variable keeps vet from flagging the %t.
var invalidHandleFormat = "invalid key type %t"

// distribute queues ns, in order, for every listener; a notification
// marked in sync (a resync) only for the listeners due for one. sync may be
// nil.
func (p *sharedProcessor) distribute(ns []notification, sync []bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if len(p.listeners) == 0 {
		return
	}
	now := p.cfg.clock.Since(p.cfg.epoch)
	for _, l := range p.listeners {
		l.add(ns, sync, now)
	}
}

// distributeOne is distribute for a single notification.
func (p *sharedProcessor) distributeOne(n notification, isSync bool) {
	ns, sync := [1]notification{n}, [1]bool{isSync}
	p.distribute(ns[:], sync[:])
}

// markSynced tells every listener, now and future, that the informer synced.
func (p *sharedProcessor) markSynced() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.synced = true
	for _, l := range p.listeners {
		l.synced.upstreamSynced()
	}
}

// run starts the listeners, waits for stop, then stops them and waits until
// their goroutines have exited. Pending notifications are discarded.
func (p *sharedProcessor) run(stop <-chan struct{}) {
	p.mu.Lock()
	p.running = true
	for _, l := range p.listeners {
		p.startLocked(l)
	}
	p.mu.Unlock()

	<-stop

	p.mu.Lock()
	p.running, p.stopped = false, true
	for _, l := range p.listeners {
		l.shutdown()
	}
	p.listeners = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// shouldResync marks which listeners are due for a resync now and reports
// whether any is.
func (p *sharedProcessor) shouldResync() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.clock.Now()
	due := false
	for _, l := range p.listeners {
		l.syncing = l.shouldResync(now)
		due = due || l.syncing
	}
	return due
}

// resyncCheckPeriodChanged recomputes every listener's effective period.
func (p *sharedProcessor) resyncCheckPeriodChanged(logger klog.Logger, check time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.listeners {
		l.resyncPeriod = effectiveResyncPeriod(logger, l.requestedResync, check)
	}
}

// effectiveResyncPeriod is the period a handler gets for a requested one:
// none if it asked for none or the informer never resyncs, otherwise at
// least the informer's check period.
func effectiveResyncPeriod(logger klog.Logger, requested, check time.Duration) time.Duration {
	switch {
	case requested == 0:
		return 0
	case check == 0:
		logger.Info("Warning: the specified resyncPeriod is invalid because this shared informer doesn't support resyncing", "desired", requested)
		return 0
	case requested < check:
		logger.Info("Warning: the specified resyncPeriod is being increased to the minimum resyncCheckPeriod", "desired", requested, "resyncCheckPeriod", check)
		return check
	}
	return requested
}
