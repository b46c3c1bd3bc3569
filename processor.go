package cache

import (
	"fmt"
	"sync"
	"time"

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
// handlers never wait for each other, and a listener never takes a lock of
// the informer.

// DefaultSlowHandlerThreshold is a SlowHandlerThreshold for a controller
// that wants lagging handlers logged: a handler that keeps up never has a
// notification pending this long.
const DefaultSlowHandlerThreshold = 10 * time.Second

const (
	// minimumResyncPeriod is the smallest per-handler resync period honoured.
	minimumResyncPeriod = time.Second
	// slowHandlerWarnInterval rate-limits the lagging-handler warning per handler.
	slowHandlerWarnInterval = time.Minute
)

// listenerConfig is what a sharedProcessor gives every listener.
type listenerConfig struct {
	clock clock.Clock
	epoch time.Time
	// synced is closed once the informer has synced: the one record of it,
	// which the informer's HasSynced and every registration's read.
	synced chan struct{}
	// keyFunc keys the objects of a collapsed backlog: the informer's
	// store's key function, so that a boxed object's store key is its key
	// (see form.Box, held_box.go).
	keyFunc       KeyFunc
	backlogLimit  int
	slowThreshold time.Duration
	metrics       HandlerMetricsProvider
	id            InformerNameAndResource
}

// sharedProcessor fans notifications out to the listeners of one informer.
// Sync notifications (resyncs, relists of unchanged objects) only go to the
// listeners currently marked as syncing.
//
// mu guards listeners and the lifecycle flags, and every listener's resync
// bookkeeping (requestedResync, resyncPeriod, nextResync, syncing, started).
// Distribution holds it shared, so that adding or removing a listener never
// interleaves with a batch; a listener's own lock nests inside it.
type sharedProcessor struct {
	cfg *listenerConfig

	mu        sync.RWMutex
	listeners []*processorListener
	running   bool
	stopped   bool
	wg        sync.WaitGroup
}

func newSharedProcessor(cfg *listenerConfig) *sharedProcessor {
	if cfg.clock == nil {
		cfg.clock = clock.RealClock{}
	}
	if cfg.keyFunc == nil {
		cfg.keyFunc = DeletionHandlingMetaNamespaceKeyFunc
	}
	cfg.epoch = cfg.clock.Now()
	cfg.synced = make(chan struct{})
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
	if isClosed(p.cfg.synced) {
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

// markSynced records that the informer synced and tells every listener;
// listeners added later read it from cfg.synced.
func (p *sharedProcessor) markSynced() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if isClosed(p.cfg.synced) {
		return
	}
	close(p.cfg.synced)
	for _, l := range p.listeners {
		l.synced.upstreamSynced()
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
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
