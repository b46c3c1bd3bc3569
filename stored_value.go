package cache

import (
	"context"
	"fmt"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/openinformer/cache/internal/hashmap"
)

// This file is the one place where the objects callers see become what a
// threadSafeMap's items hold, and back. A store that keeps objects in
// another form (encoded, say) plugs in here and nowhere else: index values
// are always computed from the caller's object at write time, never from
// the held form.

// storedForm converts between the objects callers see and what the
// store's map holds. plainForm holds objects as they are.
type storedForm interface {
	// hold is called before the store's lock is taken, on the object
	// already transformed, with its key; an error refuses that object
	// only (reported like a failed key: one object never costs another).
	// Unless the form is in place, the held value must be a pointer (or a
	// struct of one pointer, which an interface holds without allocating),
	// new for every hold: the store tells held values apart by identity.
	hold(key string, obj any) (any, error)
	// view returns the object for a held value. The store calls it
	// without its lock, since it may decode; it must not block. keep is
	// false for an object the store is about to replace or reads once for
	// a rebuild (an update's old object): a form that caches what it
	// decodes should not spend the work or the room on it.
	view(key string, held any, keep bool) (any, error)
	// drop is called, under the store's lock, once a write leaves key
	// absent: a delete, even of an absent key (an earlier write of its
	// batch, superseded, may have held a value), or a Replace that did not
	// list it. hold runs before the lock, so a hold for a key may come
	// before a concurrent delete's drop of it and be stored after: a form
	// must let each held value stand on its own, and drop may only release
	// what no held value needs.
	drop(key string)
	// inPlace reports a form whose held value is the caller's object
	// itself and that keeps nothing per key: its views cost nothing and
	// never fail, so the store reads them under its lock and copies held
	// values as objects, and it need not be told what was dropped.
	inPlace() bool
}

// plainForm is the form of a store that keeps objects as they are: the
// default.
type plainForm struct{}

func (plainForm) hold(_ string, obj any) (any, error)          { return obj, nil }
func (plainForm) view(_ string, held any, _ bool) (any, error) { return held, nil }
func (plainForm) drop(string)                                  {}
func (plainForm) inPlace() bool                                { return true }

// withStoredForm makes a store built by NewStore or NewIndexer hold its
// objects in form f.
func withStoredForm(f storedForm) StoreOption {
	return func(c *cache) { c.form = f }
}

// withThreadSafeStoredForm is withStoredForm for a threadSafeMap.
func withThreadSafeStoredForm(f storedForm) ThreadSafeStoreOption {
	return func(s *threadSafeMap) { s.form = f }
}

// holdError is a form's refusal of one object.
func holdError(key string, err error) error {
	return fmt.Errorf("object %q not stored: %w", key, err)
}

// hold returns what the map keeps for obj under key.
func (s *threadSafeMap) hold(key string, obj any) (any, error) {
	held, err := s.form.hold(key, obj)
	if err != nil {
		return nil, holdError(key, err)
	}
	return held, nil
}

// aheadHolder is a form that holds objects for a watch-list's buffer
// (store_prehold.go) otherwise than for a write: compact storage keeps
// them out of its hot cache.
type aheadHolder interface {
	holdAhead(key string, obj any) (any, error)
}

// holdAhead is hold for an object of a watch-list stream, held until the
// list is whole.
func (s *threadSafeMap) holdAhead(key string, obj any) (any, error) {
	a, ok := s.form.(aheadHolder)
	if !ok {
		return s.hold(key, obj)
	}
	held, err := a.holdAhead(key, obj)
	if err != nil {
		return nil, holdError(key, err)
	}
	return held, nil
}

// view returns the object for a held value; false when the form failed,
// which is reported, and the object is then left out of the read.
func (s *threadSafeMap) view(key string, held any) (any, bool) {
	return viewHeld(s.form, key, held, true)
}

// viewOld is view for an object being replaced: see storedForm.view.
func (s *threadSafeMap) viewOld(key string, held any) (any, bool) {
	return viewHeld(s.form, key, held, false)
}

// viewHeld is view through form f.
func viewHeld(f storedForm, key string, held any, keep bool) (any, bool) {
	obj, err := f.view(key, held, keep)
	if err != nil {
		utilruntime.HandleErrorWithContext(context.TODO(), err, "Stored object could not be read back, left out", "key", key)
		return nil, false
	}
	return obj, true
}

// viewUnderLock is how many objects a read may view while holding the
// lock: limit when the form is in place; otherwise a view may decode, and
// readers then view from a frozen snapshot after releasing the lock, so
// that no one waits on a decode.
func (s *threadSafeMap) viewUnderLock(limit int) int {
	if s.form.inPlace() {
		return limit
	}
	return 0
}

// appendObjects appends the object of every item to dst.
func (s *threadSafeMap) appendObjects(dst []any, items hashmap.Map[any]) []any {
	if s.form.inPlace() {
		return items.AppendValues(dst)
	}
	items.Range(func(key string, held any) bool {
		if obj, ok := viewHeld(s.form, key, held, true); ok {
			dst = append(dst, obj)
		}
		return true
	})
	return dst
}

// appendObjectsOf appends the objects of the items named by members.
func (s *threadSafeMap) appendObjectsOf(dst []any, items hashmap.Map[any], members keySet) []any {
	if s.form.inPlace() {
		return hashmap.AppendValuesOf(dst, items, members)
	}
	members.Range(func(key string, _ struct{}) bool {
		if held, ok := items.Get(key); ok {
			if obj, ok := viewHeld(s.form, key, held, true); ok {
				dst = append(dst, obj)
			}
		}
		return true
	})
	return dst
}

// prior is what a key held before a write: held as the map keeps it and
// obj as the caller's object. known is false when the form could not read
// it back, and the key is then found in the indexes by a scan. read marks
// a prior read before the write's lock was taken (see lockFor).
type prior struct {
	held, obj            any
	existed, known, read bool
}

// heldPrior is the prior of a key whose held value, prev, is the object
// itself: a form in place.
func heldPrior(prev any, existed bool) prior {
	return prior{held: prev, obj: prev, existed: existed, known: existed, read: true}
}

// readPrior returns what key holds, as the caller's object. Call it
// without the lock.
func (s *threadSafeMap) readPrior(key string) prior {
	s.mu.Lock()
	held, existed := s.items.Get(key)
	s.mu.Unlock()
	return s.viewPrior(key, held, existed)
}

// viewPrior is the prior of key given what it holds.
func (s *threadSafeMap) viewPrior(key string, held any, existed bool) prior {
	if !existed {
		return prior{read: true}
	}
	obj, known := s.viewOld(key, held)
	return prior{held: held, obj: obj, existed: true, known: known, read: true}
}

// holdsLocked reports whether key still holds what old was read from.
// Held values are compared by identity: a form holds pointers.
func (s *threadSafeMap) holdsLocked(key string, old prior) bool {
	held, existed := s.items.Get(key)
	return existed == old.existed && (!existed || held == old.held)
}
