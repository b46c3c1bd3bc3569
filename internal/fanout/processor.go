// Package fanout hands an informer's notifications to its handlers.
//
// Every handler (listener) owns one goroutine and a growable queue
// guarded by a mutex. The informer appends to the queue (a whole batch under
// one lock) and, only when the queue was empty, pokes a 1-buffered channel;
// the goroutine takes up to listenerBatch notifications per lock and calls
// the handler with each in turn. So a notification costs no channel
// operation while the handler is busy and at most one when it is idle,
// against client-go's three goroutines and two channel hops per
// notification. Per handler, notifications arrive in distribution order;
// handlers never wait for each other, and a listener never takes a lock of
// the informer.
package fanout

import (
	"fmt"
	"sync"
	"time"

	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// MinimumResyncPeriod is the smallest per-handler resync period honoured.
	MinimumResyncPeriod = time.Second
	// slowHandlerWarnInterval rate-limits the lagging-handler warning per handler.
	slowHandlerWarnInterval = time.Minute
)

// Config is what a processor gives every listener, fixed at construction.
type Config struct {
	// Clock times resyncs, lag and the pause after a panic; the real clock
	// when nil.
	Clock clock.Clock
	// KeyFunc keys the objects of a collapsed backlog: the informer's
	// store's key function, so that a boxed object's store key is its key
	// (see form.Box, held.go). DeletionHandlingMetaNamespaceKeyFunc's rule
	// when nil.
	KeyFunc func(obj any) (string, error)
	// BacklogLimit bounds a handler's backlog (0: unbounded), see backlog.go.
	BacklogLimit int
	// SlowThreshold is the age of a pending notification past which a
	// handler is logged as lagging (0: never).
	SlowThreshold time.Duration
	// Detector, when not nil, is told of every object handed to handlers
	// (the mutation detector). Without one, a compact informer's initial
	// adds reach the listeners boxed.
	Detector interface{ AddObject(obj any) }

	epoch time.Time
	// synced is closed once the informer has synced: the one record of it,
	// which the informer's HasSynced and every registration's read.
	synced chan struct{}
}

// Processor fans notifications out to the listeners of one informer.
// Sync notifications (resyncs, relists of unchanged objects) only go to the
// listeners currently marked as syncing.
//
// mu guards listeners and the lifecycle flags, and every listener's resync
// bookkeeping (requestedResync, resyncPeriod, nextResync, syncing, started).
// Distribution holds it shared, so that adding or removing a listener never
// interleaves with a batch; a listener's own lock nests inside it.
type Processor struct {
	cfg Config

	mu        sync.RWMutex
	listeners []*Listener
	running   bool
	stopped   bool
	wg        sync.WaitGroup
}

// NewProcessor returns a processor with no listeners, not running.
func NewProcessor(cfg Config) *Processor {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.KeyFunc == nil {
		cfg.KeyFunc = clientcache.DeletionHandlingMetaNamespaceKeyFunc
	}
	cfg.epoch = cfg.Clock.Now()
	cfg.synced = make(chan struct{})
	return &Processor{cfg: cfg}
}

// Synced is closed once MarkSynced was called.
func (p *Processor) Synced() <-chan struct{} { return p.cfg.synced }

// AddListener registers l and queues initial as its initial-list adds, all
// under the processor lock so that no notification can slip in between and
// the informer's sync cannot be reported to l before its initial list is
// counted. It reports whether the processor was already running.
func (p *Processor) AddListener(l *Listener, initial []interface{}) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		l.shutdown()
		close(l.finished)
		return false
	}
	p.listeners = append(p.listeners, l)
	if len(initial) > 0 {
		now := p.cfg.Clock.Since(p.cfg.epoch)
		chunk := make([]Notification, 0, min(len(initial), notificationChunk))
		for i, obj := range initial {
			chunk = append(chunk, Notification{Kind: Add, New: obj, Initial: true})
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

func (p *Processor) startLocked(l *Listener) {
	l.started = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		l.run()
	}()
}

// RemoveListener stops and forgets the listener behind handle. Unknown or
// already removed handles are ignored.
func (p *Processor) RemoveListener(handle any) error {
	l, ok := handle.(*Listener)
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
func (p *Processor) distribute(ns []Notification, sync []bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if len(p.listeners) == 0 {
		return
	}
	now := p.cfg.Clock.Since(p.cfg.epoch)
	for _, l := range p.listeners {
		l.add(ns, sync, now)
	}
}

// MarkSynced records that the informer synced and tells every listener;
// listeners added later read it from cfg.synced.
func (p *Processor) MarkSynced() {
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

// Run starts the listeners, waits for stop, then stops them and waits until
// their goroutines have exited. Pending notifications are discarded.
func (p *Processor) Run(stop <-chan struct{}) {
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

// ShouldResync marks which listeners are due for a resync now and reports
// whether any is.
func (p *Processor) ShouldResync() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Clock.Now()
	due := false
	for _, l := range p.listeners {
		l.syncing = l.shouldResync(now)
		due = due || l.syncing
	}
	return due
}

// ResyncCheckPeriodChanged recomputes every listener's effective period.
func (p *Processor) ResyncCheckPeriodChanged(logger klog.Logger, check time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.listeners {
		l.resyncPeriod = EffectiveResyncPeriod(logger, l.requestedResync, check)
	}
}

// EffectiveResyncPeriod is the period a handler gets for a requested one:
// none if it asked for none or the informer never resyncs, otherwise at
// least the informer's check period.
func EffectiveResyncPeriod(logger klog.Logger, requested, check time.Duration) time.Duration {
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
