package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientfeatures "k8s.io/client-go/features"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/openinformer/cache/internal/fanout"
	"github.com/openinformer/cache/internal/store"
)

// SharedIndexInformerOptions configures NewSharedIndexInformerWithOptions.
// The fields up to InformerMetricsProvider are client-go's; those after it
// are openinformer's, and each one's zero value behaves like client-go,
// log lines included.
type SharedIndexInformerOptions struct {
	// ResyncPeriod is the default handler resync period and the initial
	// resync check period; 0 means no resyncs.
	ResyncPeriod time.Duration
	// Indexers are the cache's indexes.
	Indexers Indexers
	// ObjectDescription describes the objects in reflector logs.
	ObjectDescription string
	// Identifier names the informer for metrics; metrics are published
	// only for a reserved identity.
	Identifier InformerNameAndResource
	// InformerMetricsProvider overrides the process-wide provider.
	InformerMetricsProvider InformerMetricsProvider
	// ShardSelector restricts the informer to one shard of the collection:
	// Run wraps the ListerWatcher with NewShardedListWatch (client-go v0.38).
	ShardSelector sharding.Selector

	// MaxPendingNotificationsPerHandler bounds each handler's backlog; 0
	// (the default) leaves it unbounded, like client-go.
	//
	// When a handler has this many notifications waiting (besides the at
	// most 64 its goroutine has already taken, which are delivered first)
	// and another one arrives, its backlog is collapsed: the waiting
	// notifications are dropped and only the keys they touched are
	// remembered, each with what the handler last saw for it. Until the
	// handler catches up, further notifications only add keys. When the
	// handler next asks for work it receives, for every remembered key in
	// sorted key order, the notifications that take it from its last seen
	// state to the latest state the informer has distributed for the key
	// ("current" below):
	//   - existed before and now: OnUpdate(lastSeen, current);
	//   - new: OnAdd(current, isInInitialList of the dropped add);
	//   - gone: OnDelete(DeletedFinalStateUnknown{Key, Obj: lastSeen});
	//   - if the first dropped notification for the key was a delete: that
	//     OnDelete as it was, then OnAdd(current, false) if the key exists
	//     again;
	//   - appeared and vanished in between: nothing.
	// Later notifications follow in order. So the handler loses
	// intermediate states but never a key's latest state or a deletion,
	// each key's notifications stay consistent with what the handler saw
	// before, memory per handler is bounded by the number of distinct
	// keys, and the registration's HasSynced still waits for the initial
	// list. Other handlers are unaffected.
	MaxPendingNotificationsPerHandler int
	// HandlerMetricsProvider receives per-handler lag metrics; nil means
	// the one set with SetHandlerMetricsProvider, if any.
	HandlerMetricsProvider HandlerMetricsProvider
	// SlowHandlerThreshold is how old a handler's oldest pending
	// notification may get before a warning naming the handler is logged
	// (at most once a minute per handler). 0 (the default) or a negative
	// value logs nothing, as client-go does; DefaultSlowHandlerThreshold is
	// a threshold that a handler keeping up never reaches.
	SlowHandlerThreshold time.Duration
	// StripManagedFields drops metadata.managedFields from every object
	// before it is cached, after the transform set with SetTransform, for
	// controllers that never read them: 31% of a typical pod's heap (the
	// README's "Memory" section).
	// Handlers and readers see objects without managedFields; an update
	// that leaves them unset keeps the server's. See
	// TransformStripManagedFields.
	StripManagedFields bool
	// Compact keeps the cached objects encoded, typical pods in 0.45× the
	// heap (see CompactOptions and the README's "Memory" section); nil, the
	// default, keeps them decoded, as client-go does.
	Compact *CompactOptions
	// Snapshot saves the cache to a file, periodically and when the
	// informer stops, and resumes from it on the next start
	// (docs/RESTART.md); nil, the default, syncs from the server on every
	// start, as client-go does.
	Snapshot *SnapshotOptions
}

// NewSharedInformer returns a SharedInformer without indexes.
func NewSharedInformer(lw ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration) SharedInformer {
	return NewSharedIndexInformer(lw, exampleObject, defaultEventHandlerResyncPeriod, Indexers{})
}

// NewSharedIndexInformer returns a SharedIndexInformer with the given
// indexes and default handler resync period.
func NewSharedIndexInformer(lw ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers Indexers) SharedIndexInformer {
	return NewSharedIndexInformerWithOptions(lw, exampleObject, SharedIndexInformerOptions{ResyncPeriod: defaultEventHandlerResyncPeriod, Indexers: indexers})
}

// NewSharedIndexInformerWithOptions returns a SharedIndexInformer for lw.
// Handlers asking for a resync period get at least the informer's resync
// check period, which starts as options.ResyncPeriod and shrinks to the
// smallest period requested before Run (never below one second). An
// informer created with ResyncPeriod 0 never resyncs.
func NewSharedIndexInformerWithOptions(lw ListerWatcher, exampleObject runtime.Object, options SharedIndexInformerOptions) SharedIndexInformer {
	return newSharedIndexInformer(lw, exampleObject, options, clock.RealClock{})
}

func newSharedIndexInformer(lw ListerWatcher, exampleObject runtime.Object, options SharedIndexInformerOptions, clk clock.Clock) *sharedIndexInformer {
	_ = reportNilListerWatcher(lw) // Run reports it again and does not start
	indexers := options.Indexers
	if indexers == nil {
		indexers = Indexers{}
	}
	s := &sharedIndexInformer{
		indexer:           newCache(informerKeyFunc, indexers, append(compactStoreOptions(options.Compact), WithStoreMetrics(options.Identifier, options.InformerMetricsProvider))),
		lw:                lw,
		objectType:        exampleObject,
		objectDescription: options.ObjectDescription,
		identifier:        options.Identifier,
		metricsProvider:   options.InformerMetricsProvider,
		clock:             clk,
		mutationDetector:  NewCacheMutationDetector(fmt.Sprintf("%T", exampleObject)),
		resyncCheckPeriod: options.ResyncPeriod,
		defaultResync:     options.ResyncPeriod,
		stripFields:       options.StripManagedFields,
		shardSelector:     options.ShardSelector,
		snapshot:          checkedSnapshotOptions(options.Snapshot),
		coldSweep:         ptr.Deref(options.Compact, CompactOptions{}).sweepPeriod(),
	}
	s.processor = fanout.NewProcessor(fanout.Config{
		Clock:         clk,
		KeyFunc:       informerKeyFunc,
		BacklogLimit:  options.MaxPendingNotificationsPerHandler,
		SlowThreshold: options.SlowHandlerThreshold,
		Detector:      detectorOn(s.mutationDetector),
	})
	s.handlerMetrics = options.HandlerMetricsProvider
	observeInformerState(s)
	return s
}

// sharedIndexInformer is a cache, the controller filling it and the
// processor fanning its changes out to handlers.
//
// mu guards the lifecycle (started, stopped, controller) and what may only
// be set before Run. blockDeltas is held while a batch of deltas is applied
// to the cache and distributed, and while a handler joins or leaves, so that
// a late handler sees the cache and then exactly the changes after it.
// Whether the informer synced is recorded once, by the processor.
//
// Lock order, outermost first (the package's one statement of it):
//  1. mu, or the queue's lock (RealFIFO, DeltaFIFO).
//  2. blockDeltas. The restarter takes it too: to freeze the store and
//     start its journal at one point, and to append to, flush, rename or
//     sync the journal, so the journal's file I/O runs under it; the
//     snapshot's own write walks a frozen state with no lock held.
//  3. The processor's lock, then one listener's.
//  4. The store's lock (internal/store's Map.mu), innermost: the store
//     takes it only inside its own methods (applyDeltas included), never
//     across the hand-over of changes: a batch is written, the lock
//     released, and only then are the changes distributed.
//
// The restarter's own mu guards only the version of the snapshot on disk
// and is taken alone, never across I/O. A listener's goroutine takes only
// its own listener's lock, never one of the informer's: a collapsed
// backlog is resolved from the notifications it recorded, not from the
// cache. A MembershipInformer adds two locks outside all of these: a
// handler's switch lock (held while that handler runs), then the
// MembershipInformer's own, never the other way round.
type sharedIndexInformer struct {
	indexer           *cache
	processor         *fanout.Processor
	handlerMetrics    HandlerMetricsProvider // set at construction, never changed
	mutationDetector  MutationDetector
	lw                ListerWatcher
	objectType        runtime.Object
	objectDescription string
	identifier        InformerNameAndResource
	metricsProvider   InformerMetricsProvider
	clock             clock.Clock
	stripFields       bool             // set at construction, never changed
	snapshot          *SnapshotOptions // set at construction, never changed
	coldSweep         time.Duration    // set at construction, never changed; 0: no cold tier

	blockDeltas sync.Mutex

	mu                sync.Mutex // guards the fields below
	started, stopped  bool
	controller        *controller
	resyncCheckPeriod time.Duration
	defaultResync     time.Duration
	watchErrorHandler WatchErrorHandlerWithContext
	transform         TransformFunc
	shardSelector     sharding.Selector
	// restart is the warm restart, set by start when snapshots are on.
	restart *restarter
}

var errInformerStarted = errors.New("informer has already started")

// SetWatchErrorHandler sets the handler told about list and watch
// failures; only before Run.
func (s *sharedIndexInformer) SetWatchErrorHandler(handler WatchErrorHandler) error {
	if handler == nil {
		return s.SetWatchErrorHandlerWithContext(nil)
	}
	return s.SetWatchErrorHandlerWithContext(func(_ context.Context, r *clientcache.Reflector, err error) { handler(r, err) })
}

// SetWatchErrorHandlerWithContext is SetWatchErrorHandler with a context.
func (s *sharedIndexInformer) SetWatchErrorHandlerWithContext(handler WatchErrorHandlerWithContext) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errInformerStarted
	}
	s.watchErrorHandler = handler
	return nil
}

// SetTransform sets the function applied to objects before they are
// cached; only before Run.
func (s *sharedIndexInformer) SetTransform(handler TransformFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errInformerStarted
	}
	s.transform = handler
	return nil
}

// SetShardSelector restricts the informer to selector's shard, as
// SharedIndexInformerOptions.ShardSelector does; only before Run.
func (s *sharedIndexInformer) SetShardSelector(selector sharding.Selector) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errInformerStarted
	}
	s.shardSelector = selector
	return nil
}

// Run is RunWithContext with a stop channel.
func (s *sharedIndexInformer) Run(stopCh <-chan struct{}) {
	s.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext runs the informer until ctx ends. The handlers are stopped
// only after the controller has returned; RunWithContext returns once their
// goroutines have exited. A second call only logs a warning.
func (s *sharedIndexInformer) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	ctrl, queue := s.start(ctx)
	if ctrl == nil {
		return
	}
	stopProcessor := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		s.mutationDetector.Run(stopProcessor)
	}()
	go func() {
		defer wg.Done()
		s.processor.Run(stopProcessor)
	}()
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-queue.HasSyncedChecker().Done():
			s.processor.MarkSynced()
		}
	}()
	if s.coldSweep > 0 {
		wg.Go(func() { s.indexer.storage.SweepEvery(ctx, s.clock, s.coldSweep, s.indexer.compact) })
	}
	saved := s.runSnapshots(ctx, ctrl)
	ctrl.RunWithContext(ctx)
	saved()
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	close(stopProcessor)
	wg.Wait()
}

// start builds the queue (per the feature gates, now) and the controller;
// nil if the informer was started before.
func (s *sharedIndexInformer) start(ctx context.Context) (*controller, Queue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	logger := klog.FromContext(ctx)
	if s.started {
		logger.Info("Warning: the sharedIndexInformer has started, run more than once is not allowed")
		return nil, nil
	}
	qlogger, queue, hooks := newInformerQueue(informerQueueOptions{
		logger:          logger,
		objectType:      s.objectType,
		store:           s.indexer,
		prehold:         s.indexer.preholder(),
		transform:       s.cacheTransform(),
		identifier:      s.identifier,
		metricsProvider: s.metricsProvider,
	})
	lw := NewShardedListWatch(s.lw, s.shardSelector)
	var applied appliedFunc
	if s.snapshot != nil {
		s.restart = newRestarter(logger, s, lw, *s.snapshot)
	}
	if r := s.restart; r != nil {
		hooks.warmStart = r.warmStart
		applied = func(deltas []Delta, writes store.Committed, err error) {
			r.journalApplied(qlogger, deltas, writes, err)
		}
	}
	apply := newDeltaApplier(qlogger, s.indexer, s.processor.Notify, applied)
	ctrl := newController(&Config{
		Queue:             queue,
		ListerWatcher:     lw,
		ObjectType:        s.objectType,
		ObjectDescription: s.objectDescription,
		FullResyncPeriod:  s.resyncCheckPeriod,
		ShouldResync:      s.processor.ShouldResync,
		Process: func(obj interface{}, isInInitialList bool) error {
			s.blockDeltas.Lock()
			defer s.blockDeltas.Unlock()
			return apply.process(obj, isInInitialList)
		},
		ProcessBatch: func(deltas []Delta, isInInitialList bool) error {
			s.blockDeltas.Lock()
			defer s.blockDeltas.Unlock()
			return apply.processBatch(deltas, isInInitialList)
		},
		WatchErrorHandlerWithContext: s.watchErrorHandler,
	}, s.clock, hooks)
	s.controller = ctrl
	s.started = true
	return ctrl, queue
}

// HasSynced reports whether the initial list has been cached and handed to
// the handlers' queues. It stays false if the informer stopped before.
func (s *sharedIndexInformer) HasSynced() bool {
	return IsDone(s.HasSyncedChecker())
}

// HasSyncedChecker is a DoneChecker for HasSynced.
func (s *sharedIndexInformer) HasSyncedChecker() DoneChecker {
	return informerSyncedChecker{s}
}

type informerSyncedChecker struct{ s *sharedIndexInformer }

func (c informerSyncedChecker) Name() string {
	return fmt.Sprintf("SharedIndexInformer %T", c.s.objectType)
}

func (c informerSyncedChecker) Done() <-chan struct{} { return c.s.processor.Synced() }

// LastSyncResourceVersion is the reflector's, or "" before Run.
func (s *sharedIndexInformer) LastSyncResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.controller == nil {
		return ""
	}
	return s.controller.LastSyncResourceVersion()
}

// GetStore returns the live cache. Treat it as read-only.
func (s *sharedIndexInformer) GetStore() Store { return s.indexer }

// GetIndexer returns the live cache. Treat it as read-only.
func (s *sharedIndexInformer) GetIndexer() Indexer { return s.indexer }

// AddIndexers adds indexes, also while running (existing objects are
// indexed at once); refused after the informer stopped.
func (s *sharedIndexInformer) AddIndexers(indexers Indexers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("indexer was not added because it has stopped already")
	}
	return s.indexer.AddIndexers(indexers)
}

// GetController returns a Controller view of the informer whose Run does
// nothing: the informer runs itself.
func (s *sharedIndexInformer) GetController() Controller { return informerControllerView{s} }

// HasStarted reports whether Run was called.
func (s *sharedIndexInformer) HasStarted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// IsStopped reports whether the informer's controller has returned.
func (s *sharedIndexInformer) IsStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// AddEventHandler adds h with the informer's default resync period.
func (s *sharedIndexInformer) AddEventHandler(handler ResourceEventHandler) (ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds h asking for resyncs every
// resyncPeriod (see NewSharedIndexInformerWithOptions for the floors).
func (s *sharedIndexInformer) AddEventHandlerWithResyncPeriod(handler ResourceEventHandler, resyncPeriod time.Duration) (ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions adds a handler. Added before Run, it receives
// the initial list as it arrives; added later, it first receives an add for
// every cached object (isInInitialList true), then the changes after them.
// Refused after the informer stopped, and for a nil handler.
func (s *sharedIndexInformer) AddEventHandlerWithOptions(handler ResourceEventHandler, options HandlerOptions) (ResourceEventHandlerRegistration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, fmt.Errorf("handler %v was not added to shared informer because it has stopped already", handler)
	}
	if isNilHandler(handler) {
		return nil, errors.New("handler must not be nil")
	}
	logger := klog.Background()
	if options.Logger != nil {
		logger = *options.Logger
	}
	period, effective := s.handlerResyncLocked(logger, options.ResyncPeriod)
	name := eventHandlerName(handler)
	l := s.processor.NewListener(fanout.ListenerOptions{
		Logger: logger, Handler: handler, Name: name, InformerChecker: s.HasSyncedChecker().Name(),
		Requested: period, Effective: effective,
		Metrics: listenerMetrics(s.handlerMetrics, s.identifier, name),
	})
	if !s.started {
		s.processor.AddListener(l, nil)
		return l, nil
	}
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	s.processor.AddListener(l, s.indexer.initialList())
	return l, nil
}

// handlerResyncLocked is the resync period of a handler added now that
// asked for requested (nil: the informer's default), as requestResyncLocked
// resolves it, and the period its listener gets for it: one call, so that
// what a handler gets is decided in one place.
func (s *sharedIndexInformer) handlerResyncLocked(logger klog.Logger, requested *time.Duration) (period, effective time.Duration) {
	period = s.requestResyncLocked(logger, requested)
	return period, fanout.EffectiveResyncPeriod(logger, period, s.resyncCheckPeriod)
}

// requestResyncLocked resolves a handler's requested resync period: the
// default if unset, at least a second, and at least the check period once
// running; before Run a smaller period lowers the check period instead.
func (s *sharedIndexInformer) requestResyncLocked(logger klog.Logger, requested *time.Duration) time.Duration {
	period := s.defaultResync
	if requested != nil {
		period = *requested
	}
	if period <= 0 {
		return period
	}
	if period < fanout.MinimumResyncPeriod {
		logger.Info("Warning: resync period is too small. Changing it to the minimum allowed value", "resyncPeriod", period, "minimumResyncPeriod", fanout.MinimumResyncPeriod)
		period = fanout.MinimumResyncPeriod
	}
	if period >= s.resyncCheckPeriod {
		return period
	}
	if s.started {
		logger.Info("Warning: resync period is smaller than resync check period and the informer has already started. Changing it to the resync check period", "resyncPeriod", period, "resyncCheckPeriod", s.resyncCheckPeriod)
		return s.resyncCheckPeriod
	}
	s.resyncCheckPeriod = period
	s.processor.ResyncCheckPeriodChanged(logger, period)
	return period
}

// RemoveEventHandler stops delivery to the handler behind handle and drops
// its pending notifications. A call in progress may still be running when
// it returns (see ShutDownEventHandler). Unknown handles are ignored.
func (s *sharedIndexInformer) RemoveEventHandler(handle ResourceEventHandlerRegistration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	return s.processor.RemoveListener(handle)
}

// ShutDownEventHandler removes the handler and waits until it will not be
// called any more. Calling it from inside that handler deadlocks.
func ShutDownEventHandler(informer SharedInformer, handle ResourceEventHandlerRegistration) error {
	if err := informer.RemoveEventHandler(handle); err != nil {
		return err
	}
	s, ok := handle.(interface{ ShutdownChan() <-chan struct{} })
	if !ok {
		return errors.New("handle does not support ShutdownChan()")
	}
	<-s.ShutdownChan()
	return nil
}

// informerControllerView is what GetController returns.
type informerControllerView struct{ s *sharedIndexInformer }

func (v informerControllerView) Run(<-chan struct{})            {}
func (v informerControllerView) RunWithContext(context.Context) {}
func (v informerControllerView) HasSynced() bool                { return v.s.HasSynced() }
func (v informerControllerView) HasSyncedChecker() DoneChecker  { return v.s.HasSyncedChecker() }

// LastSyncResourceVersion is "" when the InformerResourceVersion gate is off.
func (v informerControllerView) LastSyncResourceVersion() string {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.InformerResourceVersion) {
		return ""
	}
	return v.s.LastSyncResourceVersion()
}
