package compact

import (
	"reflect"
	"unsafe"
	"weak"
)

// Ghosts: objects the hot cache evicted, found again while readers hold them.
//
// A program that lists a namespace's pods on every sync reads the same
// objects again and again, and its working set is larger than any hot
// cache worth keeping (listerheavy: 5000 pods against 1000 hot ones). An
// evicted object is often still alive: a caller holds it, or it is
// garbage the collector has not reached yet. The hot cache therefore
// remembers, for a bounded number of evicted keys, a weak pointer to the
// object and to the bytes it was decoded from; a read that misses the hot
// entries but finds a ghost whose object and bytes are both still there
// returns that object instead of decoding it again. A ghost holds nothing
// alive, so it costs no live heap beyond its own entry, and it can never
// be stale: once the bytes it was decoded from are collected (the key was
// written since), the weak pointer to them is nil, never another
// allocation at the same address. An object found this way is shared,
// like any hot read.

// ghostsPerSlot bounds a shard's ghosts at this many per hot slot it was
// made with: with the default 1000 hot objects, 8000 ghosts of about 100 B
// each.
const ghostsPerSlot = 8

// ghost is an evicted entry, held weakly.
type ghost struct {
	data weak.Pointer[byte]
	n    int
	obj  weakObject
}

// weakObject is a weak pointer to the value behind a pointer held in an
// interface, with the pointer's type to rebuild the interface from.
type weakObject struct {
	elem reflect.Type
	ptr  weak.Pointer[byte]
}

// makeWeakObject holds v weakly; false when v is not a non-nil pointer to
// something with a size, which only a pointer can be found again from.
func makeWeakObject(v any) (weakObject, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Type().Elem().Size() == 0 {
		return weakObject{}, false
	}
	return weakObject{elem: rv.Type().Elem(), ptr: weak.Make((*byte)(rv.UnsafePointer()))}, true
}

// value is the object, if it is still alive.
func (w weakObject) value() (any, bool) {
	p := w.ptr.Value()
	if p == nil {
		return nil, false
	}
	return reflect.NewAt(w.elem, unsafe.Pointer(p)).Interface(), true
}

// makeGhost holds an entry's object and bytes weakly.
func makeGhost[V any](v hotVersion[V]) (ghost, bool) {
	obj, ok := makeWeakObject(any(v.value))
	if !ok || len(v.data) == 0 {
		return ghost{}, false
	}
	return ghost{data: weak.Make(unsafe.SliceData(v.data)), n: len(v.data), obj: obj}, true
}

// of returns the ghost's object if it was decoded from data and is still
// alive.
func (g ghost) of(data []byte) (any, bool) {
	if g.n != len(data) || g.data.Value() != unsafe.SliceData(data) {
		return nil, false
	}
	return g.obj.value()
}

// ghostRing is a shard's ghosts, the oldest replaced first. Guarded by the
// shard's lock: written under it, read under its read lock.
type ghostRing struct {
	byKey map[string]ghost
	order []string
	next  int
	// limit is fixed when the cache is made, so that a cache whose
	// capacity changes keeps one bound on its ghosts.
	limit int
}

// bury remembers key's evicted version v, replacing the oldest ghost when
// the ring is full.
func (r *ghostRing) bury(key string, v ghost) {
	if r.limit == 0 {
		return
	}
	if _, ok := r.byKey[key]; !ok {
		if len(r.order) < r.limit {
			r.order = append(r.order, key)
		} else {
			delete(r.byKey, r.order[r.next])
			r.order[r.next] = key
			r.next = (r.next + 1) % r.limit
		}
	}
	r.byKey[key] = v
}
