package cache

// ResourceEventHandlerFuncs adapts up to three plain functions to a
// ResourceEventHandler. A nil function means "not interested"; the
// isInInitialList flag of OnAdd is dropped (use
// ResourceEventHandlerDetailedFuncs to receive it). Handlers must treat the
// objects they receive as read-only: they are shared with the cache.
type ResourceEventHandlerFuncs struct {
	AddFunc    func(obj interface{})
	UpdateFunc func(oldObj, newObj interface{})
	DeleteFunc func(obj interface{})
}

// OnAdd calls AddFunc when it is set.
func (f ResourceEventHandlerFuncs) OnAdd(obj interface{}, _ bool) {
	if f.AddFunc != nil {
		f.AddFunc(obj)
	}
}

// OnUpdate calls UpdateFunc when it is set.
func (f ResourceEventHandlerFuncs) OnUpdate(oldObj, newObj interface{}) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc when it is set. obj may be a
// DeletedFinalStateUnknown tombstone.
func (f ResourceEventHandlerFuncs) OnDelete(obj interface{}) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(obj)
	}
}

// ResourceEventHandlerDetailedFuncs is ResourceEventHandlerFuncs whose
// AddFunc also learns whether the object belongs to the initial list, which
// is what a handler needs to report its own sync state.
type ResourceEventHandlerDetailedFuncs struct {
	AddFunc    func(obj interface{}, isInInitialList bool)
	UpdateFunc func(oldObj, newObj interface{})
	DeleteFunc func(obj interface{})
}

// OnAdd calls AddFunc when it is set.
func (f ResourceEventHandlerDetailedFuncs) OnAdd(obj interface{}, isInInitialList bool) {
	if f.AddFunc != nil {
		f.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc when it is set.
func (f ResourceEventHandlerDetailedFuncs) OnUpdate(oldObj, newObj interface{}) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc when it is set.
func (f ResourceEventHandlerDetailedFuncs) OnDelete(obj interface{}) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(obj)
	}
}

// FilteringResourceEventHandler forwards to Handler only the events whose
// objects pass FilterFunc. An update is translated by membership: an object
// entering the filtered set arrives as an add (not in the initial list), one
// leaving it as a delete of the old object. FilterFunc must not modify
// objects and must cope with DeletedFinalStateUnknown on delete. Unlike
// client-go, nil fields do not panic: a nil FilterFunc lets every object
// through and a nil Handler receives nothing.
type FilteringResourceEventHandler struct {
	FilterFunc func(obj interface{}) bool
	Handler    ResourceEventHandler
}

// OnAdd forwards obj if it passes the filter.
func (f FilteringResourceEventHandler) OnAdd(obj interface{}, isInInitialList bool) {
	if f.passes(obj) {
		f.Handler.OnAdd(obj, isInInitialList)
	}
}

// OnUpdate forwards an update, an add or a delete depending on which of the
// two objects pass the filter.
func (f FilteringResourceEventHandler) OnUpdate(oldObj, newObj interface{}) {
	wasIn, isIn := f.passes(oldObj), f.passes(newObj)
	switch {
	case wasIn && isIn:
		f.Handler.OnUpdate(oldObj, newObj)
	case isIn:
		f.Handler.OnAdd(newObj, false)
	case wasIn:
		f.Handler.OnDelete(oldObj)
	}
}

// OnDelete forwards obj if it passes the filter.
func (f FilteringResourceEventHandler) OnDelete(obj interface{}) {
	if f.passes(obj) {
		f.Handler.OnDelete(obj)
	}
}

// passes reports whether obj should reach Handler; false without a Handler.
func (f FilteringResourceEventHandler) passes(obj interface{}) bool {
	return f.Handler != nil && (f.FilterFunc == nil || f.FilterFunc(obj))
}
