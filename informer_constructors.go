package cache

import (
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// informerKeyFunc keys every informer's store, queue and handler backlog.
var informerKeyFunc KeyFunc = DeletionHandlingMetaNamespaceKeyFunc

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
		store = NewStore(informerKeyFunc, metrics)
	} else {
		store = NewIndexer(informerKeyFunc, options.Indexers, metrics)
	}
	return store, newInformerController(store, options)
}

// NewInformer returns a store and its Controller calling h on every change,
// with resyncs every resyncPeriod (0: never).
//
// Deprecated: Use NewInformerWithOptions instead.
func NewInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler) (Store, Controller) {
	store := NewStore(informerKeyFunc)
	return store, newInformerController(store, InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod})
}

// NewIndexerInformer is NewInformer with an Indexer.
//
// Deprecated: Use NewInformerWithOptions instead.
func NewIndexerInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, indexers Indexers) (Indexer, Controller) {
	store := NewIndexer(informerKeyFunc, indexers)
	return store, newInformerController(store, InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Indexers: indexers})
}

// NewTransformingInformer is NewInformer whose objects pass through
// transformer before they are stored and handed to h.
//
// Deprecated: Use NewInformerWithOptions instead.
func NewTransformingInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, transformer TransformFunc) (Store, Controller) {
	store := NewStore(informerKeyFunc)
	return store, newInformerController(store, InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Transform: transformer})
}

// NewTransformingIndexerInformer is NewIndexerInformer whose objects pass
// through transformer before they are stored and handed to h.
//
// Deprecated: Use NewInformerWithOptions instead.
func NewTransformingIndexerInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, indexers Indexers, transformer TransformFunc) (Indexer, Controller) {
	store := NewIndexer(informerKeyFunc, indexers)
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
	apply := deltaApplier{logger: qlogger, handler: handler, store: store}
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

// deltaApplier is an informer's processing step: the store applies each
// popped batch of deltas and returns what changed, and the handler is told.
type deltaApplier struct {
	logger  klog.Logger
	handler ResourceEventHandler
	store   Store
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

// apply applies deltas oldest first, each told to the handler before the
// next is applied; a store error stops at that delta.
func (a deltaApplier) apply(deltas Deltas, isInInitialList bool) error {
	for i := range deltas {
		if err := a.applyAndTell(deltas[i:i+1], isInInitialList); err != nil {
			return err
		}
	}
	return nil
}

// processBatch is a ProcessBatchFunc: the store writes the batch at once
// and the handler is told, afterwards, about the writes that succeeded.
func (a deltaApplier) processBatch(deltas []Delta, isInInitialList bool) error {
	if err := batchable(deltas); err != nil {
		return err
	}
	return a.applyAndTell(deltas, isInInitialList)
}

// applyAndTell has the store apply deltas and tells the handler what
// changed, even when some delta failed.
func (a deltaApplier) applyAndTell(deltas []Delta, isInInitialList bool) error {
	buf := getChangeBuffer()
	defer buf.release()
	changes, dropped, err := deltaStoreOf(a.store, a.logger).applyDeltas(deltas, isInInitialList, buf.changes)
	buf.changes = changes
	for _, d := range dropped {
		utilruntime.HandleErrorWithLogger(a.logger, d, "Object from a relist not stored")
	}
	a.tell(changes)
	return err
}

// batchNotifier is a handler that takes a batch's changes at once: the
// shared informer's fan-out.
type batchNotifier interface {
	notifyBatch([]notification)
}

// tell hands changes to the handler in order.
func (a deltaApplier) tell(changes []notification) {
	if b, ok := a.handler.(batchNotifier); ok {
		b.notifyBatch(changes)
		return
	}
	for _, n := range changes {
		switch n.kind {
		case addNotification:
			a.handler.OnAdd(n.newObj, n.initial)
		case updateNotification:
			a.handler.OnUpdate(n.oldObj, n.newObj)
		case deleteNotification:
			a.handler.OnDelete(n.oldObj)
		}
	}
}

// changeBuffer is apply's slice of changes, pooled because a busy informer
// would otherwise allocate one for every batch. Nothing keeps it past the
// batch: listeners copy each change.
type changeBuffer struct{ changes []notification }

var changeBufferPool = sync.Pool{New: func() any { return new(changeBuffer) }}

func getChangeBuffer() *changeBuffer { return changeBufferPool.Get().(*changeBuffer) }

// release empties the buffer, so the pool pins no object, and returns it.
func (b *changeBuffer) release() {
	clear(b.changes)
	b.changes = b.changes[:0]
	changeBufferPool.Put(b)
}
