package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientfeatures "k8s.io/client-go/features"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// controller runs a Reflector that fills Config.Queue and a loop that pops
// the queue into Config.Process (or ProcessBatch).
type controller struct {
	config Config
	clock  clock.Clock

	mu        sync.RWMutex
	reflector *Reflector
}

// New returns a Controller for a copy of c. Nothing runs until Run.
func New(c *Config) Controller { return newController(c, clock.RealClock{}) }

// newController is New with the clock its Reflector runs on.
func newController(c *Config, clk clock.Clock) *controller {
	return &controller{config: *c, clock: clk}
}

// Run is RunWithContext with a stop channel.
func (c *controller) Run(stopCh <-chan struct{}) {
	c.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext runs the reflector and the process loop until ctx ends,
// then closes the queue and returns once the reflector has exited. A Config
// without Queue, ListerWatcher or Process is reported and not run.
func (c *controller) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	if err := validateControllerConfig(&c.config); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Controller not started")
		return
	}
	logger := klog.FromContext(ctx)
	r := NewReflectorWithOptions(c.config.ListerWatcher, c.config.ObjectType, c.config.Queue, ReflectorOptions{
		Logger:          &logger,
		ResyncPeriod:    c.config.FullResyncPeriod,
		MinWatchTimeout: c.config.MinWatchTimeout,
		TypeDescription: c.config.ObjectDescription,
		Clock:           c.clock,
	})
	r.ShouldResync = c.config.ShouldResync
	r.WatchListPageSize = c.config.WatchListPageSize
	if h := c.config.WatchErrorHandler; h != nil {
		r.setWatchErrorHandler(func(_ context.Context, r *clientcache.Reflector, err error) { h(r, err) })
	} else if h := c.config.WatchErrorHandlerWithContext; h != nil {
		r.setWatchErrorHandler(h)
	}
	c.mu.Lock()
	c.reflector = r
	c.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		c.config.Queue.Close()
	}()
	go func() {
		defer wg.Done()
		r.RunWithContext(ctx)
	}()
	wait.UntilWithContext(ctx, c.processLoop, time.Second)
	wg.Wait()
}

// validateControllerConfig reports the Config fields without which a
// controller cannot run.
func validateControllerConfig(c *Config) error {
	switch {
	case c.Queue == nil:
		return errors.New("controller Config has no Queue")
	case c.ListerWatcher == nil:
		return errors.New("controller Config has no ListerWatcher")
	case c.Process == nil:
		return errors.New("controller Config has no Process function")
	}
	return nil
}

// HasSynced reports whether the queue has delivered the initial list.
func (c *controller) HasSynced() bool { return c.config.Queue.HasSynced() }

// HasSyncedChecker is the queue's DoneChecker for HasSynced.
func (c *controller) HasSyncedChecker() DoneChecker { return c.config.Queue.HasSyncedChecker() }

// LastSyncResourceVersion is the reflector's, or "" before Run.
func (c *controller) LastSyncResourceVersion() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.reflector == nil {
		return ""
	}
	return c.reflector.LastSyncResourceVersion()
}

// processLoop pops until ctx ends or the queue is closed. A processing
// error is reported and the item dropped: the queue has no requeue.
func (c *controller) processLoop(ctx context.Context) {
	batchQueue, canBatch := c.config.Queue.(QueueWithBatch)
	useBatch := canBatch && c.config.ProcessBatch != nil &&
		clientfeatures.FeatureGates().Enabled(clientfeatures.InOrderInformersBatchProcess)
	process := PopProcessFunc(c.config.Process)
	for ctx.Err() == nil {
		var err error
		if useBatch {
			err = batchQueue.PopBatch(c.config.ProcessBatch, process)
		} else {
			_, err = c.config.Queue.Pop(process)
		}
		switch {
		case errors.Is(err, ErrFIFOClosed):
			return
		case err != nil:
			utilruntime.HandleErrorWithContext(ctx, err, "Popped item not fully processed")
		}
	}
}

// InformerOptions configures NewInformerWithOptions.
type InformerOptions struct {
	// Logger replaces klog.Background() when set.
	Logger *klog.Logger
	// ListerWatcher lists and watches the resource.
	ListerWatcher ListerWatcher
	// ObjectType is an example of the objects to expect.
	ObjectType runtime.Object
	// Handler is called synchronously, on the processing goroutine, for
	// every change. Nil means the informer only maintains its store.
	Handler ResourceEventHandler
	// ResyncPeriod, if non-zero, redelivers every stored object as an
	// update that often.
	ResyncPeriod time.Duration
	// MinWatchTimeout is the minimum watch request timeout; values under
	// 5 minutes are raised to 5 minutes.
	MinWatchTimeout time.Duration
	// Indexers, if non-nil, makes the store an Indexer with these indexes.
	Indexers Indexers
	// Transform rewrites objects before they are stored and handed out.
	Transform TransformFunc
	// Identifier names the informer for metrics; metrics are published
	// only for a reserved identity.
	Identifier InformerNameAndResource
	// InformerMetricsProvider overrides the process-wide provider.
	InformerMetricsProvider InformerMetricsProvider
}

// NewInformerWithOptions returns a store kept in step with the resource and
// the Controller that does it, calling options.Handler on every change. The
// store is an Indexer when options.Indexers is non-nil. Use the store only
// for reads: writing to it would make notifications wrong.
func NewInformerWithOptions(options InformerOptions) (Store, Controller) {
	metrics := WithStoreMetrics(options.Identifier, options.InformerMetricsProvider)
	var store Store
	if options.Indexers == nil {
		store = NewStore(DeletionHandlingMetaNamespaceKeyFunc, metrics)
	} else {
		store = NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, options.Indexers, metrics)
	}
	return store, newInformerController(store, options)
}

// NewInformer returns a store and its Controller calling h on every change,
// with resyncs every resyncPeriod (0: never).
//
// Deprecated: Use NewInformerWithOptions instead.
func NewInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler) (Store, Controller) {
	store := NewStore(DeletionHandlingMetaNamespaceKeyFunc)
	return store, newInformerController(store, InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod})
}

// NewIndexerInformer is NewInformer with an Indexer.
//
// Deprecated: Use NewInformerWithOptions instead.
func NewIndexerInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, indexers Indexers) (Indexer, Controller) {
	store := NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, indexers)
	return store, newInformerController(store, InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Indexers: indexers})
}

// NewTransformingInformer is NewInformer whose objects pass through
// transformer before they are stored and handed to h.
//
// Deprecated: Use NewInformerWithOptions instead.
func NewTransformingInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, transformer TransformFunc) (Store, Controller) {
	store := NewStore(DeletionHandlingMetaNamespaceKeyFunc)
	return store, newInformerController(store, InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Transform: transformer})
}

// NewTransformingIndexerInformer is NewIndexerInformer whose objects pass
// through transformer before they are stored and handed to h.
//
// Deprecated: Use NewInformerWithOptions instead.
func NewTransformingIndexerInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, indexers Indexers, transformer TransformFunc) (Indexer, Controller) {
	store := NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, indexers)
	return store, newInformerController(store, InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Indexers: indexers, Transform: transformer})
}

// newInformerController wires a queue chosen by the feature gates (read
// now) between a reflector and store, calling options.Handler inline.
func newInformerController(store Store, options InformerOptions) Controller {
	_ = reportNilListerWatcher(options.ListerWatcher) // Run reports it again and does not start
	logger := klog.Background()
	if options.Logger != nil {
		logger = *options.Logger
	}
	handler := options.Handler
	if handler == nil {
		handler = ResourceEventHandlerFuncs{}
	}
	qlogger, queue := newInformerQueue(informerQueueOptions{
		logger:          logger,
		objectType:      options.ObjectType,
		store:           store,
		transform:       options.Transform,
		identifier:      options.Identifier,
		metricsProvider: options.InformerMetricsProvider,
	})
	apply := deltaApplier{logger: qlogger, handler: handler, store: store, keyFunc: DeletionHandlingMetaNamespaceKeyFunc}
	return New(&Config{
		Queue:            queue,
		ListerWatcher:    options.ListerWatcher,
		ObjectType:       options.ObjectType,
		FullResyncPeriod: options.ResyncPeriod,
		MinWatchTimeout:  options.MinWatchTimeout,
		Process:          apply.process,
		ProcessBatch:     apply.processBatch,
	})
}

// deltaApplier applies popped deltas to a store and tells a handler what
// changed. Whether a change is an add or an update is decided by the store,
// never by the delta type.
type deltaApplier struct {
	logger  klog.Logger
	handler ResourceEventHandler
	store   Store
	keyFunc KeyFunc
}

var errNotDeltas = errors.New("object given as Process argument is not Deltas")

// process is a ProcessFunc: obj must be Deltas.
func (a deltaApplier) process(obj interface{}, isInInitialList bool) error {
	deltas, ok := obj.(Deltas)
	if !ok {
		return errNotDeltas
	}
	return a.apply(deltas, isInInitialList)
}

// apply handles deltas oldest first; a store error stops at that delta.
func (a deltaApplier) apply(deltas Deltas, isInInitialList bool) error {
	for _, d := range deltas {
		if err := a.applyOne(d, isInInitialList); err != nil {
			return err
		}
	}
	return nil
}

func (a deltaApplier) applyOne(d Delta, isInInitialList bool) error {
	switch d.Type {
	case Added, Updated, Replaced, Sync:
		return a.upsert(d.Object, isInInitialList)
	case Deleted:
		if err := a.store.Delete(d.Object); err != nil {
			return err
		}
		a.handler.OnDelete(d.Object)
	case ReplacedAll:
		info, ok := d.Object.(ReplacedAllInfo)
		if !ok {
			return fmt.Errorf("ReplacedAll did not contain ReplacedAllInfo: %T", d.Object)
		}
		return a.replaceAll(info, isInInitialList)
	case SyncAll:
		if _, ok := d.Object.(SyncAllInfo); !ok {
			return fmt.Errorf("SyncAll did not contain SyncAllInfo: %T", d.Object)
		}
		for _, obj := range a.store.List() {
			a.handler.OnUpdate(obj, obj)
		}
	case Bookmark:
		info, ok := d.Object.(BookmarkInfo)
		if !ok {
			return fmt.Errorf("bookmark delta did not contain BookmarkInfo: %T", d.Object)
		}
		a.store.Bookmark(info.ResourceVersion)
	}
	return nil
}

func (a deltaApplier) upsert(obj interface{}, isInInitialList bool) error {
	old, existed, err := a.write(obj)
	if err != nil {
		return err
	}
	if existed {
		a.handler.OnUpdate(old, obj)
	} else {
		a.handler.OnAdd(obj, isInInitialList)
	}
	return nil
}

// write stores obj and returns what its key held before. With this
// package's store the key is computed once for the lookup and the write;
// a single delta per pop is the common case when events arrive slowly.
func (a deltaApplier) write(obj interface{}) (old interface{}, existed bool, err error) {
	if own, ok := a.store.(*cache); ok {
		key, old, existed, err := own.lookup(obj)
		if err != nil {
			return nil, false, err
		}
		return old, existed, own.updateKeyed(key, obj)
	}
	if old, existed, err = a.store.Get(obj); err == nil && existed {
		return old, true, a.store.Update(obj)
	}
	return nil, false, a.store.Add(obj)
}

// replaceAll swaps the store's contents for info's list, then reports the
// difference: a tombstone (holding the stored object) for every key that is
// gone, then an update or add per listed object in list order. The store is
// replaced first so that handlers already read the new state. An object
// without a key is reported and left out; the others are stored.
func (a deltaApplier) replaceAll(info ReplacedAllInfo, isInInitialList bool) error {
	if own, ok := a.store.(*cache); ok {
		a.replaceAllKeyed(own, info, isInInitialList)
		return nil
	}
	listed := make(map[string]struct{}, len(info.Objects))
	objs := make([]interface{}, 0, len(info.Objects))
	for _, obj := range info.Objects {
		key, err := a.keyFunc(obj)
		if err != nil {
			a.reportDropped(KeyError{Obj: obj, Err: err})
			continue
		}
		listed[key] = struct{}{}
		objs = append(objs, obj)
	}
	info.Objects = objs
	var gone []DeletedFinalStateUnknown
	for _, key := range a.store.ListKeys() {
		if _, ok := listed[key]; ok {
			continue
		}
		old, exists, err := a.store.GetByKey(key)
		if err != nil || !exists {
			utilruntime.HandleErrorWithLogger(a.logger, err, "Stored key vanished during replace, reporting its deletion without an object", "key", key)
			old = nil
		}
		gone = append(gone, DeletedFinalStateUnknown{Key: key, Obj: old})
	}
	previous := make([]interface{}, len(info.Objects))
	for i, obj := range info.Objects {
		if old, exists, err := a.store.Get(obj); err == nil && exists {
			previous[i] = old
		}
	}
	if err := a.store.Replace(info.Objects, info.ResourceVersion); err != nil {
		return err
	}
	for _, tombstone := range gone {
		a.handler.OnDelete(tombstone)
	}
	for i, obj := range info.Objects {
		if previous[i] != nil {
			a.handler.OnUpdate(previous[i], obj)
		} else {
			a.handler.OnAdd(obj, isInInitialList)
		}
	}
	return nil
}

// replaceAllKeyed is replaceAll for this package's store: each key is
// computed once, and what was stored before (for tombstones and for add
// versus update) is read from the replaced content after the swap instead
// of looked up key by key beforehand.
func (a deltaApplier) replaceAllKeyed(own *cache, info ReplacedAllInfo, isInInitialList bool) {
	r, dropped := own.replaceList(info.Objects, info.ResourceVersion)
	for _, err := range dropped {
		a.reportDropped(err)
	}
	notes := make([]notification, 0, len(r.objs))
	if r.before.Len() > 0 {
		r.before.Range(func(key string, held interface{}) bool {
			if _, listed := r.after.Get(key); !listed {
				old, _ := own.storage.view(key, held)
				notes = append(notes, notification{kind: deleteNotification, oldObj: DeletedFinalStateUnknown{Key: key, Obj: old}})
			}
			return true
		})
	}
	for i, obj := range r.objs {
		if held, existed := r.before.Get(r.keys[i]); existed {
			old, _ := own.storage.view(r.keys[i], held)
			notes = append(notes, notification{kind: updateNotification, oldObj: old, newObj: obj})
		} else {
			notes = append(notes, notification{kind: addNotification, newObj: obj, initial: isInInitialList})
		}
	}
	a.notifyAll(notes)
}

// reportDropped reports an object of a relist that could not be stored;
// the rest of the relist is stored and notified all the same.
func (a deltaApplier) reportDropped(err error) {
	utilruntime.HandleErrorWithLogger(a.logger, err, "Object from a relist not stored")
}

// notifyAll hands notes to the handler in order: to the informer's fan-out
// a chunk at a time, so that no listener's lock is held for a whole relist.
func (a deltaApplier) notifyAll(notes []notification) {
	b, ok := a.handler.(batchNotifier)
	if !ok {
		for _, n := range notes {
			a.notify(n)
		}
		return
	}
	for len(notes) > 0 {
		chunk := notes[:min(len(notes), notificationChunk)]
		b.notifyBatch(chunk)
		notes = notes[len(chunk):]
	}
}

// unbatchableFormat keeps client-go's capitalised error text.
var unbatchableFormat = "Delta type %s is not supported in batch processing"

// processBatch is a ProcessBatchFunc. With a TransactionStore the batch is
// written in one transaction and handlers are told afterwards, only about
// the writes that succeeded; otherwise each delta is applied on its own.
func (a deltaApplier) processBatch(deltas []Delta, isInInitialList bool) error {
	txnStore, ok := a.store.(TransactionStore)
	if !ok {
		return a.applyEach(deltas, isInInitialList)
	}
	// This package's store takes writes with their keys, so each key is
	// computed once for both the lookup and the write.
	own, keyed := a.store.(*cache)
	bufs := getBatchBuffers(len(deltas))
	defer bufs.release()
	txns, notes := bufs.txns, bufs.notes
	for i, d := range deltas {
		var err error
		if keyed, err = a.plan(own, keyed, d, isInInitialList, &txns[i], &notes[i]); err != nil {
			return err
		}
	}
	if txnErr := a.commitBatch(txnStore, own, keyed, txns); txnErr != nil {
		for _, i := range txnErr.SuccessfulIndices {
			if i < len(notes) {
				a.notify(notes[i])
			}
		}
		return fmt.Errorf("not all items in the batch successfully processed: %s", txnErr.Error())
	}
	a.notifyAll(notes)
	return nil
}

// applyEach applies deltas one by one, for a store without transactions,
// and reports every failure together.
func (a deltaApplier) applyEach(deltas []Delta, isInInitialList bool) error {
	var errs []error
	for _, d := range deltas {
		if err := a.applyOne(d, isInInitialList); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("unexpected error when handling deltas: %v", errs)
	}
	return nil
}

// plan fills t, the transaction for d, and n, the notification it gives
// once written; whether that is an add or an update depends on what the
// store holds now. keyed says whether t carries its key for this package's
// store own, and the result whether it still does.
func (a deltaApplier) plan(own *cache, keyed bool, d Delta, isInInitialList bool, t *ThreadSafeStoreTransaction, n *notification) (bool, error) {
	t.Object = d.Object
	switch d.Type {
	case Added, Updated, Replaced, Sync:
		var old interface{}
		var exists bool
		if keyed {
			old, exists, keyed = a.lookupKeyed(own, t)
		} else {
			old, exists, _ = a.store.Get(d.Object)
		}
		if exists {
			t.Type = TransactionTypeUpdate
			*n = notification{kind: updateNotification, oldObj: old, newObj: d.Object}
		} else {
			t.Type = TransactionTypeAdd
			*n = notification{kind: addNotification, newObj: d.Object, initial: isInInitialList}
		}
	case Deleted:
		t.Type = TransactionTypeDelete
		*n = notification{kind: deleteNotification, oldObj: d.Object}
		if keyed {
			_, _, keyed = a.lookupKeyed(own, t)
		}
	default:
		return keyed, fmt.Errorf(unbatchableFormat, d.Type)
	}
	return keyed, nil
}

// batchBuffers are processBatch's per-batch slices. They are pooled because
// a busy informer would otherwise allocate both for every batch; nothing
// keeps them past the batch (the store copies each write, listeners copy
// each notification).
type batchBuffers struct {
	txns  []ThreadSafeStoreTransaction
	notes []notification
}

var batchBufferPool = sync.Pool{New: func() any { return new(batchBuffers) }}

// getBatchBuffers returns zeroed buffers of length n.
func getBatchBuffers(n int) *batchBuffers {
	b := batchBufferPool.Get().(*batchBuffers)
	if cap(b.txns) < n {
		b.txns = make([]ThreadSafeStoreTransaction, n)
		b.notes = make([]notification, n)
	}
	b.txns, b.notes = b.txns[:n], b.notes[:n]
	return b
}

// release zeroes the buffers, so the pool pins no object, and returns them.
func (b *batchBuffers) release() {
	clear(b.txns)
	clear(b.notes)
	batchBufferPool.Put(b)
}

// batchNotifier is a handler that takes a batch's notifications at once:
// the informer's fan-out, which then hands each listener the whole batch
// under one lock.
type batchNotifier interface {
	notifyBatch([]notification)
}

// lookupKeyed fills in t's key and returns the object stored under it. ok
// is false when the key cannot be computed; the batch then goes through the
// plain Transaction, which reports that write's KeyError.
func (a deltaApplier) lookupKeyed(own *cache, t *ThreadSafeStoreTransaction) (old interface{}, exists, ok bool) {
	key, old, exists, err := own.lookup(t.Object)
	if err != nil {
		return nil, false, false
	}
	t.Key = key
	return old, exists, true
}

// commitBatch writes the batch: with every key known, straight into this
// package's store; otherwise through the store's Transaction.
func (a deltaApplier) commitBatch(txnStore TransactionStore, own *cache, keyed bool, txns []ThreadSafeStoreTransaction) *TransactionError {
	if keyed {
		return own.commitKeyed(txns, nil, nil, len(txns))
	}
	plain := make([]Transaction, len(txns))
	for i, t := range txns {
		plain[i] = t.Transaction
	}
	return txnStore.Transaction(plain...)
}

func (a deltaApplier) notify(n notification) {
	switch n.kind {
	case addNotification:
		a.handler.OnAdd(n.newObj, n.initial)
	case updateNotification:
		a.handler.OnUpdate(n.oldObj, n.newObj)
	case deleteNotification:
		a.handler.OnDelete(n.oldObj)
	}
}
