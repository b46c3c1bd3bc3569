package cache

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
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
	metrics := []StoreOption{WithStoreMetrics(options.Identifier, options.InformerMetricsProvider)}
	indexers := options.Indexers
	if indexers == nil {
		indexers = Indexers{}
	}
	store := newCache(informerKeyFunc, indexers, metrics)
	return store, newInformerController(store, options)
}

// NewInformer returns a store and its Controller calling h on every change,
// with resyncs every resyncPeriod (0: never).
//
// Deprecated: Use NewInformerWithOptions instead.
func NewInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler) (Store, Controller) {
	store := newCache(informerKeyFunc, Indexers{}, nil)
	return store, newInformerController(store, InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod})
}

// NewIndexerInformer is NewInformer with an Indexer.
//
// Deprecated: Use NewInformerWithOptions instead.
func NewIndexerInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, indexers Indexers) (Indexer, Controller) {
	store := newCache(informerKeyFunc, indexers, nil)
	return store, newInformerController(store, InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Indexers: indexers})
}

// NewTransformingInformer is NewInformer whose objects pass through
// transformer before they are stored and handed to h.
//
// Deprecated: Use NewInformerWithOptions instead.
func NewTransformingInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, transformer TransformFunc) (Store, Controller) {
	store := newCache(informerKeyFunc, Indexers{}, nil)
	return store, newInformerController(store, InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Transform: transformer})
}

// NewTransformingIndexerInformer is NewIndexerInformer whose objects pass
// through transformer before they are stored and handed to h.
//
// Deprecated: Use NewInformerWithOptions instead.
func NewTransformingIndexerInformer(lw ListerWatcher, objType runtime.Object, resyncPeriod time.Duration, h ResourceEventHandler, indexers Indexers, transformer TransformFunc) (Indexer, Controller) {
	store := newCache(informerKeyFunc, indexers, nil)
	return store, newInformerController(store, InformerOptions{ListerWatcher: lw, ObjectType: objType, Handler: h, ResyncPeriod: resyncPeriod, Indexers: indexers, Transform: transformer})
}

// newInformerController wires a queue chosen by the feature gates (read
// now) between a reflector and store, calling options.Handler inline.
func newInformerController(store *cache, options InformerOptions) Controller {
	_ = reportNilListerWatcher(options.ListerWatcher) // Run reports it again and does not start
	logger := klog.Background()
	if options.Logger != nil {
		logger = *options.Logger
	}
	handler := options.Handler
	if handler == nil {
		handler = ResourceEventHandlerFuncs{}
	}
	qlogger, queue, hooks := newInformerQueue(informerQueueOptions{
		logger:          logger,
		objectType:      options.ObjectType,
		store:           store,
		prehold:         store.preholder(),
		transform:       options.Transform,
		identifier:      options.Identifier,
		metricsProvider: options.InformerMetricsProvider,
	})
	apply := newDeltaApplier(qlogger, store, tellHandler(handler), nil)
	return newController(&Config{
		Queue:            queue,
		ListerWatcher:    options.ListerWatcher,
		ObjectType:       options.ObjectType,
		FullResyncPeriod: options.ResyncPeriod,
		MinWatchTimeout:  options.MinWatchTimeout,
		Process:          apply.process,
		ProcessBatch:     apply.processBatch,
	}, clock.RealClock{}, hooks)
}
