package cache

import (
	"container/heap"
	"errors"
	"sync"
)

var (
	// errHeapClosed is returned by writes to a closed Heap and by Pop on a
	// closed, empty one.
	errHeapClosed = errors.New("heap is closed")
	// errHeapNotFound is returned by Delete of an absent key.
	errHeapNotFound = errors.New("object not found")
	// errNilLessFunc is returned by a Heap built without a LessFunc, where
	// client-go would panic on the first comparison.
	errNilLessFunc = errors.New("heap has no less function")
)

// Heap is a priority queue of keyed objects: Pop returns the least object
// according to its LessFunc. Each key is held once; adding an existing key
// replaces its object and moves it to its new place.
type Heap struct {
	mu     sync.Mutex
	cond   sync.Cond
	data   heapData
	closed bool
}

// heapEntry is one stored object and its current position in the heap.
type heapEntry struct {
	key   string
	obj   interface{}
	index int
}

// heapData is the container/heap view of the entries plus the key index.
type heapData struct {
	entries  []*heapEntry
	byKey    map[string]*heapEntry
	keyFunc  KeyFunc
	lessFunc LessFunc
}

func (h *heapData) Len() int           { return len(h.entries) }
func (h *heapData) Less(i, j int) bool { return h.lessFunc(h.entries[i].obj, h.entries[j].obj) }

func (h *heapData) Swap(i, j int) {
	h.entries[i], h.entries[j] = h.entries[j], h.entries[i]
	h.entries[i].index = i
	h.entries[j].index = j
}

// Push and Pop keep byKey in step with entries.
func (h *heapData) Push(x interface{}) {
	e := x.(*heapEntry)
	e.index = len(h.entries)
	h.entries = append(h.entries, e)
	h.byKey[e.key] = e
}

func (h *heapData) Pop() interface{} {
	n := len(h.entries) - 1
	e := h.entries[n]
	h.entries[n] = nil
	h.entries = h.entries[:n]
	delete(h.byKey, e.key)
	return e
}

// NewHeap returns an empty Heap keyed by keyFn and ordered by lessFn.
func NewHeap(keyFn KeyFunc, lessFn LessFunc) *Heap {
	h := &Heap{data: heapData{byKey: map[string]*heapEntry{}, keyFunc: keyFn, lessFunc: lessFn}}
	h.cond.L = &h.mu
	return h
}

func (h *Heap) keyOf(obj interface{}) (string, error) {
	if h.data.keyFunc == nil {
		return "", KeyError{Obj: obj, Err: errNilKeyFunc}
	}
	if h.data.lessFunc == nil {
		return "", errNilLessFunc
	}
	key, err := h.data.keyFunc(obj)
	if err != nil {
		return "", KeyError{Obj: obj, Err: err}
	}
	return key, nil
}

// Add inserts obj, or replaces the object stored under its key.
func (h *Heap) Add(obj interface{}) error {
	key, err := h.keyOf(obj)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errHeapClosed
	}
	h.upsertLocked(key, obj)
	h.cond.Broadcast()
	return nil
}

// Update is Add.
func (h *Heap) Update(obj interface{}) error { return h.Add(obj) }

// BulkAdd adds every object of list as Add would. All keys are computed
// first, so a key error leaves the heap unchanged.
func (h *Heap) BulkAdd(list []interface{}) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errHeapClosed
	}
	keys := make([]string, len(list))
	for i, obj := range list {
		key, err := h.keyOf(obj)
		if err != nil {
			return err
		}
		keys[i] = key
	}
	for i, obj := range list {
		h.upsertLocked(keys[i], obj)
	}
	h.cond.Broadcast()
	return nil
}

// AddIfNotPresent inserts obj unless its key is already stored, in which
// case the stored object is kept.
func (h *Heap) AddIfNotPresent(obj interface{}) error {
	key, err := h.keyOf(obj)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errHeapClosed
	}
	if _, ok := h.data.byKey[key]; !ok {
		heap.Push(&h.data, &heapEntry{key: key, obj: obj})
	}
	h.cond.Broadcast()
	return nil
}

func (h *Heap) upsertLocked(key string, obj interface{}) {
	if e, ok := h.data.byKey[key]; ok {
		e.obj = obj
		heap.Fix(&h.data, e.index)
		return
	}
	heap.Push(&h.data, &heapEntry{key: key, obj: obj})
}

// Delete removes obj's key; an absent key is an error. Deleting from a
// closed heap is allowed.
func (h *Heap) Delete(obj interface{}) error {
	key, err := h.keyOf(obj)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.data.byKey[key]
	if !ok {
		return errHeapNotFound
	}
	heap.Remove(&h.data, e.index)
	return nil
}

// Pop waits for an object and removes and returns the least one. Once the
// heap is closed and empty it returns an error.
func (h *Heap) Pop() (interface{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.data.Len() == 0 {
		if h.closed {
			return nil, errHeapClosed
		}
		h.cond.Wait()
	}
	return heap.Pop(&h.data).(*heapEntry).obj, nil
}

// List returns every stored object, in no particular order.
func (h *Heap) List() []interface{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]interface{}, len(h.data.entries))
	for i, e := range h.data.entries {
		out[i] = e.obj
	}
	return out
}

// ListKeys returns every stored key, in no particular order.
func (h *Heap) ListKeys() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, len(h.data.entries))
	for i, e := range h.data.entries {
		out[i] = e.key
	}
	return out
}

// Get returns the object stored under obj's key.
func (h *Heap) Get(obj interface{}) (item interface{}, exists bool, err error) {
	key, err := h.keyOf(obj)
	if err != nil {
		return nil, false, err
	}
	return h.GetByKey(key)
}

// GetByKey returns the object stored under key.
func (h *Heap) GetByKey(key string) (item interface{}, exists bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.data.byKey[key]; ok {
		return e.obj, true, nil
	}
	return nil, false, nil
}

// Close makes further writes fail and wakes every waiting Pop; objects
// still stored can be popped.
func (h *Heap) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	h.cond.Broadcast()
}

// IsClosed reports whether Close was called.
func (h *Heap) IsClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}
