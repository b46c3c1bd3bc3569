package cache

// This file is the single place where the package borrows client-go's
// vocabulary. Every type here carries no behaviour of its own: interfaces,
// function types and plain data. Aliasing them (rather than redefining them)
// is what makes openinformer a drop-in: a value built by this package is a
// client-go Store, Indexer or SharedIndexInformer, so generated listers,
// controller-runtime's cache.Options.NewInformer and code that type-switches
// on client-go's tombstones all keep working.
//
// Everything that does work (constructors, methods, functions) is implemented
// in this package, not here.

import (
	"reflect"

	clientcache "k8s.io/client-go/tools/cache"
)

// Objects, keys and names.
type (
	// KeyFunc computes the storage key of an object.
	KeyFunc = clientcache.KeyFunc
	// ExplicitKey is a key that key functions return unchanged.
	ExplicitKey = clientcache.ExplicitKey
	// ObjectName is a namespace and a name; its String form is the store key.
	ObjectName = clientcache.ObjectName
	// KeyError reports that a KeyFunc could not compute the key of Obj. An
	// alias, like TransactionError, so that errors.As finds it whichever
	// package the error came from and whichever the caller names.
	KeyError = clientcache.KeyError
	// DeletedFinalStateUnknown is the tombstone delivered for an object whose
	// deletion was inferred from a relist rather than observed.
	DeletedFinalStateUnknown = clientcache.DeletedFinalStateUnknown
	// Object is what typed informers store: runtime.Object plus metadata.
	Object = clientcache.Object
)

// Stores and indexes.
type (
	// Store is a keyed collection of objects.
	Store = clientcache.Store
	// Indexer is a Store with secondary indexes.
	Indexer = clientcache.Indexer
	// ThreadSafeStore is the key-addressed, concurrency-safe store under an Indexer.
	ThreadSafeStore = clientcache.ThreadSafeStore
	// ThreadSafeStoreWithTransaction is a ThreadSafeStore that applies several writes under one lock.
	ThreadSafeStoreWithTransaction = clientcache.ThreadSafeStoreWithTransaction
	// ThreadSafeStoreTransaction is one keyed write of a ThreadSafeStore transaction.
	ThreadSafeStoreTransaction = clientcache.ThreadSafeStoreTransaction
	// TransactionStore is a Store that applies a batch of writes at once.
	TransactionStore = clientcache.TransactionStore
	// Transaction is one write of a TransactionStore batch.
	Transaction = clientcache.Transaction
	// TransactionType names the kind of write in a Transaction.
	TransactionType = clientcache.TransactionType
	// TransactionError reports which writes of a batch failed.
	TransactionError = clientcache.TransactionError
	// IndexFunc computes the index values of an object.
	IndexFunc = clientcache.IndexFunc
	// Indexers maps index names to index functions.
	Indexers = clientcache.Indexers
	// Indices maps index names to prebuilt indexes.
	Indices = clientcache.Indices
	// TypedIndexFunc is an IndexFunc over a concrete type.
	TypedIndexFunc[T any] = clientcache.TypedIndexFunc[T]
	// TypedIndexers maps index names to typed index functions.
	TypedIndexers[T any] = clientcache.TypedIndexers[T]
	// TypedIndexer is an Indexer whose reads return T.
	TypedIndexer[T any] = clientcache.TypedIndexer[T]
	// TransformFunc rewrites an object before it is stored.
	TransformFunc = clientcache.TransformFunc
	// AppendFunc receives each object a lister helper selects.
	AppendFunc = clientcache.AppendFunc
	// GenericLister reads objects of one resource from an Indexer.
	GenericLister = clientcache.GenericLister
	// GenericNamespaceLister reads objects of one resource in one namespace.
	GenericNamespaceLister = clientcache.GenericNamespaceLister
	// KeyListerGetter lists keys and gets objects by key.
	KeyListerGetter = clientcache.KeyListerGetter
	// KeyLister lists keys.
	KeyLister = clientcache.KeyLister
	// KeyGetter gets objects by key.
	KeyGetter = clientcache.KeyGetter
	// LessFunc orders two heap items.
	LessFunc = clientcache.LessFunc
	// ExpirationPolicy decides when an ExpirationCache entry has expired.
	ExpirationPolicy = clientcache.ExpirationPolicy
	// TimestampedEntry is an ExpirationCache entry with its insertion time.
	TimestampedEntry = clientcache.TimestampedEntry
	// MutationDetector checks that cached objects are never mutated.
	MutationDetector = clientcache.MutationDetector
	// MutationCacheOptions configures a MutationCache.
	MutationCacheOptions = clientcache.MutationCacheOptions
	// ResourceVersionComparator compares the resource versions of two objects.
	ResourceVersionComparator = clientcache.ResourceVersionComparator
	// RetryWithDeadline decides whether to retry an error within a time window.
	RetryWithDeadline = clientcache.RetryWithDeadline
)

// Queues and deltas.
type (
	// Queue is what a Reflector writes to and a controller pops from.
	Queue = clientcache.Queue
	// QueueWithBatch is a Queue that can pop several deltas at once.
	QueueWithBatch = clientcache.QueueWithBatch
	// PopProcessFunc handles one popped item.
	PopProcessFunc = clientcache.PopProcessFunc
	// ProcessFunc handles one popped item inside a controller.
	ProcessFunc = clientcache.ProcessFunc
	// ProcessBatchFunc handles a batch of popped deltas.
	ProcessBatchFunc = clientcache.ProcessBatchFunc
	// DeltaType is the kind of change a Delta records.
	DeltaType = clientcache.DeltaType
	// Delta is one change to one object.
	Delta = clientcache.Delta
	// Deltas is the list of changes queued for one object, oldest first.
	Deltas = clientcache.Deltas
	// DeltaFIFOOptions configures a DeltaFIFO.
	DeltaFIFOOptions = clientcache.DeltaFIFOOptions
	// ReplacedAllInfo is the object of a ReplacedAll delta: a whole new list.
	ReplacedAllInfo = clientcache.ReplacedAllInfo
	// SyncAllInfo is the object of a SyncAll delta.
	SyncAllInfo = clientcache.SyncAllInfo
	// BookmarkInfo is the object of a Bookmark delta.
	BookmarkInfo = clientcache.BookmarkInfo
	// DoneChecker names something that finishes and signals it on a channel.
	DoneChecker = clientcache.DoneChecker
)

// Listing and watching.
type (
	// Lister lists objects.
	Lister = clientcache.Lister
	// ListerWithContext lists objects with a context.
	ListerWithContext = clientcache.ListerWithContext
	// Watcher starts watches.
	Watcher = clientcache.Watcher
	// WatcherWithContext starts watches with a context.
	WatcherWithContext = clientcache.WatcherWithContext
	// ListerWatcher lists and watches one resource.
	ListerWatcher = clientcache.ListerWatcher
	// ListerWatcherWithContext lists and watches one resource with a context.
	ListerWatcherWithContext = clientcache.ListerWatcherWithContext
	// ListFunc lists objects.
	ListFunc = clientcache.ListFunc
	// ListWithContextFunc lists objects with a context.
	ListWithContextFunc = clientcache.ListWithContextFunc
	// WatchFunc starts a watch.
	WatchFunc = clientcache.WatchFunc
	// WatchFuncWithContext starts a watch with a context.
	WatchFuncWithContext = clientcache.WatchFuncWithContext
	// Getter is the part of a REST client that ListWatch needs.
	Getter = clientcache.Getter
	// ReflectorStore is what a Reflector writes to.
	ReflectorStore = clientcache.ReflectorStore
	// ReflectorBookmarkStore is a ReflectorStore that wants watch bookmarks.
	ReflectorBookmarkStore = clientcache.ReflectorBookmarkStore
	// TransformingStore is a ReflectorStore that transforms objects itself.
	TransformingStore = clientcache.TransformingStore
	// ResourceVersionUpdater is told the resource version of every watch event.
	ResourceVersionUpdater = clientcache.ResourceVersionUpdater
	// ReflectorOptions configures a Reflector.
	ReflectorOptions = clientcache.ReflectorOptions
	// VeryShortWatchError reports a watch that closed within a second
	// without a single event; an alias so that a watch error handler
	// written against client-go recognises it with errors.As.
	VeryShortWatchError = clientcache.VeryShortWatchError
	// ShouldResyncFunc reports whether a periodic resync should happen now.
	ShouldResyncFunc = clientcache.ShouldResyncFunc
	// WatchErrorHandler is told about list and watch failures. Its
	// parameter is client-go's Reflector type; see reflectorDescriptor.
	WatchErrorHandler = clientcache.WatchErrorHandler
	// WatchErrorHandlerWithContext is a WatchErrorHandler with a context.
	WatchErrorHandlerWithContext = clientcache.WatchErrorHandlerWithContext
)

// Informers and handlers.
type (
	// Controller runs a Reflector and a process loop.
	Controller = clientcache.Controller
	// Config configures a Controller built with New.
	Config = clientcache.Config
	// SharedInformer is an informer that many handlers share.
	SharedInformer = clientcache.SharedInformer
	// SharedIndexInformer is a SharedInformer with an Indexer.
	SharedIndexInformer = clientcache.SharedIndexInformer
	// TypedSharedIndexInformer is a SharedIndexInformer over a concrete type.
	TypedSharedIndexInformer[T Object] = clientcache.TypedSharedIndexInformer[T]
	// ResourceEventHandler is told about adds, updates and deletes.
	ResourceEventHandler = clientcache.ResourceEventHandler
	// TypedResourceEventHandler is a ResourceEventHandler over a concrete type.
	TypedResourceEventHandler[T Object] = clientcache.TypedResourceEventHandler[T]
	// DeletedObject is what a typed handler receives on delete: the object,
	// or the tombstone of an inferred deletion.
	DeletedObject[T Object] = clientcache.DeletedObject[T]
	// ResourceEventHandlerRegistration is the handle of an added handler.
	ResourceEventHandlerRegistration = clientcache.ResourceEventHandlerRegistration
	// HandlerOptions configures one handler registration.
	HandlerOptions = clientcache.HandlerOptions
	// InformerSynced reports whether an informer has synced.
	InformerSynced = clientcache.InformerSynced
)

// Metrics.
type (
	// GaugeMetric is a value that goes up and down.
	GaugeMetric = clientcache.GaugeMetric
	// CounterMetric is a value that only goes up.
	CounterMetric = clientcache.CounterMetric
	// SummaryMetric observes a stream of values.
	SummaryMetric = clientcache.SummaryMetric
	// HistogramMetric observes a stream of values into buckets.
	HistogramMetric = clientcache.HistogramMetric
	// MetricsProvider builds the Reflector's metrics.
	MetricsProvider = clientcache.MetricsProvider
)

// NamespaceIndex is the conventional name of the index by namespace.
const NamespaceIndex = clientcache.NamespaceIndex

// The kinds of change a Delta records.
const (
	Added       = clientcache.Added
	Updated     = clientcache.Updated
	Deleted     = clientcache.Deleted
	Replaced    = clientcache.Replaced
	ReplacedAll = clientcache.ReplacedAll
	Sync        = clientcache.Sync
	SyncAll     = clientcache.SyncAll
	Bookmark    = clientcache.Bookmark
)

// The kinds of write in a Transaction.
const (
	TransactionTypeAdd    = clientcache.TransactionTypeAdd
	TransactionTypeUpdate = clientcache.TransactionTypeUpdate
	TransactionTypeDelete = clientcache.TransactionTypeDelete
)

// The sentinel errors are client-go's own values, so errors.Is matches
// whichever package a caller compares against.
var (
	// ErrFIFOClosed is returned by a queue's Pop once it is closed and empty.
	ErrFIFOClosed = clientcache.ErrFIFOClosed
	// ErrZeroLengthDeltasObject is returned when a key is asked of an empty Deltas.
	ErrZeroLengthDeltasObject = clientcache.ErrZeroLengthDeltasObject
)

// client-go's own key and index functions, compared by identity only (they
// are never called): a queue or index configured with client-go's function
// takes the same fast path as one configured with ours, whose behaviour is
// the same.
var (
	clientGoMetaNamespaceIndexFunc               = reflect.ValueOf(clientcache.MetaNamespaceIndexFunc).Pointer()
	clientGoMetaNamespaceKeyFunc                 = reflect.ValueOf(clientcache.MetaNamespaceKeyFunc).Pointer()
	clientGoDeletionHandlingMetaNamespaceKeyFunc = reflect.ValueOf(clientcache.DeletionHandlingMetaNamespaceKeyFunc).Pointer()
)

// reflectorDescriptor builds, once per Reflector, the client-go Reflector
// value that watch error handlers receive (their parameter type is
// client-go's). It is never run; it only answers Name and TypeDescription
// with the values of the Reflector it stands for.
func reflectorDescriptor(name, typeDescription string) *clientcache.Reflector {
	return clientcache.NewReflectorWithOptions(nil, nil, nil, clientcache.ReflectorOptions{Name: name, TypeDescription: typeDescription})
}
