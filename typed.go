package cache

import (
	"fmt"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// TypedResourceEventHandlerFuncs adapts up to three plain functions to a
// TypedResourceEventHandler. Unset functions are skipped. AddFunc is not
// told whether the object came from the initial list; use
// TypedResourceEventHandlerDetailedFuncs for that.
type TypedResourceEventHandlerFuncs[T Object] struct {
	AddFunc    func(obj T)
	UpdateFunc func(oldObj, newObj T)
	DeleteFunc func(obj DeletedObject[T])
}

// OnAdd calls AddFunc if set.
func (r TypedResourceEventHandlerFuncs[T]) OnAdd(obj T, isInInitialList bool) {
	if r.AddFunc != nil {
		r.AddFunc(obj)
	}
}

// OnUpdate calls UpdateFunc if set.
func (r TypedResourceEventHandlerFuncs[T]) OnUpdate(oldObj, newObj T) {
	if r.UpdateFunc != nil {
		r.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc if set.
func (r TypedResourceEventHandlerFuncs[T]) OnDelete(obj DeletedObject[T]) {
	if r.DeleteFunc != nil {
		r.DeleteFunc(obj)
	}
}

// TypedResourceEventHandlerDetailedFuncs is TypedResourceEventHandlerFuncs
// whose AddFunc also learns whether the object came from the initial list,
// which handlers need in order to report their own sync state.
type TypedResourceEventHandlerDetailedFuncs[T Object] struct {
	AddFunc    func(obj T, isInInitialList bool)
	UpdateFunc func(oldObj, newObj T)
	DeleteFunc func(obj DeletedObject[T])
}

// OnAdd calls AddFunc if set.
func (r TypedResourceEventHandlerDetailedFuncs[T]) OnAdd(obj T, isInInitialList bool) {
	if r.AddFunc != nil {
		r.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc if set.
func (r TypedResourceEventHandlerDetailedFuncs[T]) OnUpdate(oldObj, newObj T) {
	if r.UpdateFunc != nil {
		r.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc if set.
func (r TypedResourceEventHandlerDetailedFuncs[T]) OnDelete(obj DeletedObject[T]) {
	if r.DeleteFunc != nil {
		r.DeleteFunc(obj)
	}
}

// TypedFilteringResourceEventHandler forwards to Handler only the events
// whose objects pass FilterFunc. An update turns into an add when only the
// new object passes and into a delete when only the old one does, so Handler
// sees the filtered set as if it were its own collection. On delete the
// filter sees DeletedObject.OptionalObj, which is the zero T when the
// informer no longer had the object. A nil FilterFunc lets everything
// through; a nil Handler receives nothing.
type TypedFilteringResourceEventHandler[T Object] struct {
	FilterFunc func(obj T) bool
	Handler    TypedResourceEventHandler[T]
}

// OnAdd forwards the add if obj passes the filter.
func (r TypedFilteringResourceEventHandler[T]) OnAdd(obj T, isInInitialList bool) {
	if r.Handler != nil && r.passes(obj) {
		r.Handler.OnAdd(obj, isInInitialList)
	}
}

// OnUpdate forwards an update, add, delete or nothing, depending on which of
// the two objects pass the filter.
func (r TypedFilteringResourceEventHandler[T]) OnUpdate(oldObj, newObj T) {
	if r.Handler == nil {
		return
	}
	older, newer := r.passes(oldObj), r.passes(newObj)
	switch {
	case older && newer:
		r.Handler.OnUpdate(oldObj, newObj)
	case newer:
		r.Handler.OnAdd(newObj, false)
	case older:
		r.Handler.OnDelete(DeletedObject[T]{OptionalObj: oldObj})
	}
}

// OnDelete forwards the delete if obj.OptionalObj passes the filter.
func (r TypedFilteringResourceEventHandler[T]) OnDelete(obj DeletedObject[T]) {
	if r.Handler != nil && r.passes(obj.OptionalObj) {
		r.Handler.OnDelete(obj)
	}
}

func (r TypedFilteringResourceEventHandler[T]) passes(obj T) bool {
	return r.FilterFunc == nil || r.FilterFunc(obj)
}

// NewTypedSharedIndexInformer wraps informer with type-safe variants of its
// handler and indexer methods. The informer must only ever hold T objects;
// an object of another type is reported through utilruntime.HandleError and
// kept away from typed handlers instead of crashing the process.
func NewTypedSharedIndexInformer[T Object](informer SharedIndexInformer) TypedSharedIndexInformer[T] {
	return &typedSharedIndexInformer[T]{SharedIndexInformer: informer}
}

type typedSharedIndexInformer[T Object] struct {
	SharedIndexInformer
}

// AddTypedEventHandler registers handler like AddEventHandlerWithOptions,
// with default options when none are given.
func (s *typedSharedIndexInformer[T]) AddTypedEventHandler(handler TypedResourceEventHandler[T], options ...HandlerOptions) (ResourceEventHandlerRegistration, error) {
	if len(options) > 1 {
		return nil, fmt.Errorf("at most one HandlerOptions may be passed, got %d", len(options))
	}
	var opts HandlerOptions
	if len(options) == 1 {
		opts = options[0]
	}
	return s.AddEventHandlerWithOptions(&typedResourceEventHandler[T]{handler: handler}, opts)
}

// AddTypedIndexers adds typed index functions to the informer's indexer.
func (s *typedSharedIndexInformer[T]) AddTypedIndexers(indexers TypedIndexers[T]) error {
	return s.AddIndexers(TypedIndexersToIndexers(indexers))
}

// GetTypedIndexer returns the informer's indexer with typed read methods.
func (s *typedSharedIndexInformer[T]) GetTypedIndexer() TypedIndexer[T] {
	return &typedIndexer[T]{Indexer: s.GetIndexer()}
}

// typedResourceEventHandler is the untyped ResourceEventHandler that the
// informer calls; it converts each object to T before calling the typed
// handler. It bears the name of client-go's wrapper because handler names
// (sync checkers, logs, metric labels) are derived from it.
type typedResourceEventHandler[T Object] struct {
	handler TypedResourceEventHandler[T]
}

func (h *typedResourceEventHandler[T]) OnAdd(obj interface{}, isInInitialList bool) {
	typed, ok := obj.(T)
	if !ok {
		reportTypedMismatch[T]("add", obj)
		return
	}
	h.handler.OnAdd(typed, isInInitialList)
}

func (h *typedResourceEventHandler[T]) OnUpdate(oldObj, newObj interface{}) {
	typedOld, okOld := oldObj.(T)
	typedNew, okNew := newObj.(T)
	switch {
	case !okOld:
		reportTypedMismatch[T]("update", oldObj)
	case !okNew:
		reportTypedMismatch[T]("update", newObj)
	default:
		h.handler.OnUpdate(typedOld, typedNew)
	}
}

// OnDelete still delivers a delete whose object is not a T, as a tombstone
// with the object's key, because dropping it would leave the handler
// believing the object exists.
func (h *typedResourceEventHandler[T]) OnDelete(obj interface{}) {
	switch o := obj.(type) {
	case T:
		h.handler.OnDelete(DeletedObject[T]{OptionalObj: o})
	case DeletedFinalStateUnknown:
		deleted := DeletedObject[T]{FinalStateUnknown: &o}
		if typed, ok := o.Obj.(T); ok {
			deleted.OptionalObj = typed
		} else if o.Obj != nil {
			reportTypedMismatch[T]("delete", o.Obj)
		}
		h.handler.OnDelete(deleted)
	default:
		reportTypedMismatch[T]("delete", obj)
		key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			utilruntime.HandleError(fmt.Errorf("typed event handler dropped the delete: %w", err))
			return
		}
		h.handler.OnDelete(DeletedObject[T]{FinalStateUnknown: &DeletedFinalStateUnknown{Key: key, Obj: obj}})
	}
}

func reportTypedMismatch[T any](event string, obj interface{}) {
	var want T
	utilruntime.HandleError(fmt.Errorf("typed event handler for %T received an object of type %T on %s", want, obj, event))
}

// typedIndexer adds typed reads to an Indexer.
type typedIndexer[T any] struct {
	Indexer
}

// TypedIndex is Index with typed argument and results.
func (i *typedIndexer[T]) TypedIndex(indexName string, obj T) ([]T, error) {
	objs, err := i.Index(indexName, obj)
	if err != nil {
		return nil, err
	}
	return typedObjects[T](indexName, objs)
}

// ByTypedIndex is ByIndex with typed results.
func (i *typedIndexer[T]) ByTypedIndex(indexName, indexedValue string) ([]T, error) {
	objs, err := i.ByIndex(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	return typedObjects[T](indexName, objs)
}

// AddTypedIndexers is AddIndexers with typed index functions.
func (i *typedIndexer[T]) AddTypedIndexers(newIndexers TypedIndexers[T]) error {
	return i.AddIndexers(TypedIndexersToIndexers(newIndexers))
}

func typedObjects[T any](indexName string, objs []interface{}) ([]T, error) {
	typed := make([]T, len(objs))
	for n, obj := range objs {
		t, ok := obj.(T)
		if !ok {
			return nil, fmt.Errorf("index %q holds an object of type %T, not %T", indexName, obj, t)
		}
		typed[n] = t
	}
	return typed, nil
}
