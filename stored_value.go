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
// store's map holds. A nil storedForm holds objects as they are.
type storedForm interface {
	// hold is called before the store's lock is taken, on the object
	// already transformed, with its key; an error refuses that object
	// only (reported like a failed key: one object never costs another).
	hold(key string, obj any) (any, error)
	// view returns the object for a held value. It may be called with or
	// without the lock; it must not block or take the store's lock.
	view(key string, held any) (any, error)
	// drop is called after key is deleted from the map.
	drop(key string)
}

// The store calls drop under its lock, once the write that deleted the key
// is done (a transaction that deletes a key and writes it again drops
// nothing). hold runs before the lock, so a hold for a key may come before
// a concurrent delete's drop of it and be stored after: a form must let
// each held value stand on its own, and drop may only release what no
// held value needs.

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
	if s.form == nil {
		return obj, nil
	}
	held, err := s.form.hold(key, obj)
	if err != nil {
		return nil, holdError(key, err)
	}
	return held, nil
}

// view returns the object for a held value; false when the form failed,
// which is reported, and the object is then left out of the read.
func (s *threadSafeMap) view(key string, held any) (any, bool) {
	if s.form == nil {
		return held, true
	}
	return viewHeld(s.form, key, held)
}

// viewHeld is view through a form that is not nil.
func viewHeld(f storedForm, key string, held any) (any, bool) {
	obj, err := f.view(key, held)
	if err != nil {
		utilruntime.HandleErrorWithContext(context.TODO(), err, "Stored object could not be read back, left out", "key", key)
		return nil, false
	}
	return obj, true
}

// dropLocked tells the form that key left the map; a deleting write calls
// it once done.
func (s *threadSafeMap) dropLocked(key string) {
	if s.form != nil {
		s.form.drop(key)
	}
}

// appendObjects appends the object of every item to dst.
func (s *threadSafeMap) appendObjects(dst []any, items hashmap.Map[any]) []any {
	if s.form == nil {
		return items.AppendValues(dst)
	}
	items.Range(func(key string, held any) bool {
		if obj, ok := viewHeld(s.form, key, held); ok {
			dst = append(dst, obj)
		}
		return true
	})
	return dst
}

// appendObjectsOf appends the objects of the items named by members.
func (s *threadSafeMap) appendObjectsOf(dst []any, items hashmap.Map[any], members keySet) []any {
	if s.form == nil {
		return hashmap.AppendValuesOf(dst, items, members)
	}
	members.Range(func(key string, _ struct{}) bool {
		if held, ok := items.Get(key); ok {
			if obj, ok := viewHeld(s.form, key, held); ok {
				dst = append(dst, obj)
			}
		}
		return true
	})
	return dst
}

// prior is what a key held before a write, as the caller's object: known
// is false when the form could not read it back, and the key is then
// found in the indexes by a scan.
type prior struct {
	obj            any
	existed, known bool
}

// priorOf returns the prior of a key whose held value was prev.
func (s *threadSafeMap) priorOf(key string, prev any, existed bool) prior {
	if !existed {
		return prior{}
	}
	obj, known := s.view(key, prev)
	return prior{obj: obj, existed: true, known: known}
}
