package store

import (
	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/hashmap"
)

// This file is the one place where the objects callers see become what a
// Map's items hold, and back, through the map's form.Form: index values are
// always computed from the caller's object at write time, never from the
// held form.

// hold returns what the map keeps for obj under key.
func (s *Map) hold(key string, obj any) (any, error) {
	held, err := s.form.Hold(key, obj)
	if err != nil {
		return nil, form.HoldError(key, err)
	}
	return held, nil
}

// holdAhead is hold for an object of a watch-list stream or a LIST, held
// until the list is whole.
func (s *Map) holdAhead(key string, obj any) (any, error) {
	held, err := s.form.HoldAhead(key, obj)
	if err != nil {
		return nil, form.HoldError(key, err)
	}
	return held, nil
}

// View returns the object for a held value; false when the form failed,
// which is reported, and the object is then left out of the read.
func (s *Map) View(key string, held any) (any, bool) {
	return form.View(s.form, key, held, true)
}

// ViewOld is View for an object being replaced: see form.Form's View.
func (s *Map) ViewOld(key string, held any) (any, bool) {
	return form.View(s.form, key, held, false)
}

// viewUnderLock is how many objects a read may view while holding the
// lock: limit when the form is in place; otherwise a view may decode, and
// readers then view from the frozen maps after releasing the lock, so
// that no one waits on a decode.
func (s *Map) viewUnderLock(limit int) int {
	if s.form.InPlace() {
		return limit
	}
	return 0
}

// appendObjects appends the object of every item to dst.
func (s *Map) appendObjects(dst []any, items hashmap.Map[any]) []any {
	if s.form.InPlace() {
		return items.AppendValues(dst)
	}
	items.Range(func(key string, held any) bool {
		if obj, ok := form.View(s.form, key, held, true); ok {
			dst = append(dst, obj)
		}
		return true
	})
	return dst
}

// appendObjectsOf appends the objects of the items named by members.
func (s *Map) appendObjectsOf(dst []any, items hashmap.Map[any], members keySet) []any {
	if s.form.InPlace() {
		return hashmap.AppendValuesOf(dst, items, members)
	}
	members.Range(func(key string, _ struct{}) bool {
		if held, ok := items.Get(key); ok {
			if obj, ok := form.View(s.form, key, held, true); ok {
				dst = append(dst, obj)
			}
		}
		return true
	})
	return dst
}

// Prior is what a key held before a write: held as the map keeps it and
// obj as the caller's object. known is false when the form could not read
// it back, and the key is then found in the indexes by a scan. read marks
// a prior read before the write's lock was taken (see lockFor).
type Prior struct {
	held, obj            any
	existed, known, read bool
}

// heldPrior is the prior of a key whose held value, prev, is the object
// itself: a form in place.
func heldPrior(prev any, existed bool) Prior {
	return Prior{held: prev, obj: prev, existed: existed, known: existed, read: true}
}

// ReadPrior returns what key holds, as the caller's object. Call it
// without the lock.
func (s *Map) ReadPrior(key string) Prior {
	s.mu.Lock()
	held, existed := s.items.Get(key)
	s.mu.Unlock()
	return s.viewPrior(key, held, existed)
}

// viewPrior is the prior of key given what it holds.
func (s *Map) viewPrior(key string, held any, existed bool) Prior {
	if !existed {
		return Prior{read: true}
	}
	obj, known := s.ViewOld(key, held)
	return Prior{held: held, obj: obj, existed: true, known: known, read: true}
}

// holdsLocked reports whether key still holds what old was read from.
// Held values are compared by identity: a form holds pointers.
func (s *Map) holdsLocked(key string, old Prior) bool {
	held, existed := s.items.Get(key)
	return existed == old.existed && (!existed || held == old.held)
}

// AbsentPrior is the prior of a key known to hold nothing.
func AbsentPrior() Prior { return Prior{read: true} }

// Existed reports whether the key held something.
func (p Prior) Existed() bool { return p.existed }
