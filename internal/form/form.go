// Package form holds the storage forms of the store: how the objects
// callers see become what the store's map holds, and back. Plain keeps
// objects as they are (the default); Compact keeps each one as its
// encoding. The store reaches a form only through the Form interface, and
// no other component names either form: a compact informer's objects
// travel through the queue and the fan-out as opaque held values.
package form

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/labelset"
)

// Form converts between the objects callers see and what the store's map
// holds. Index values are always computed from the caller's object at
// write time, never from the held form.
type Form interface {
	// Hold is called before the store's lock is taken, on the object
	// already transformed, with its key; an error refuses that object
	// only (reported like a failed key: one object never costs another).
	// Unless the form is in place, the held value must be a pointer (or a
	// struct of one pointer, which an interface holds without allocating),
	// new for every hold: the store tells held values apart by identity.
	Hold(key string, obj any) (any, error)
	// HoldAhead is Hold for an object of a watch-list stream or a LIST,
	// held until the list is whole (see the store's Preheld): a form with
	// a cache of decoded objects leaves it alone.
	HoldAhead(key string, obj any) (any, error)
	// View returns the object for a held value. The store calls it
	// without its lock, since it may decode; it must not block. keep is
	// false for an object the store is about to replace or reads once for
	// a rebuild (an update's old object): a form that caches what it
	// decodes should not spend the work or the room on it.
	View(key string, held any, keep bool) (any, error)
	// Drop is called, under the store's lock, once a write leaves key
	// absent: a delete, even of an absent key (an earlier write of its
	// batch, superseded, may have held a value), or a Replace that did not
	// list it. Hold runs before the lock, so a hold for a key may come
	// before a concurrent delete's drop of it and be stored after: a form
	// must let each held value stand on its own, and Drop may only release
	// what no held value needs.
	Drop(key string)
	// InPlace reports a form whose held value is the caller's object
	// itself and that keeps nothing per key: its views cost nothing and
	// never fail, so the store reads them under its lock and copies held
	// values as objects, and it need not be told what was dropped.
	InPlace() bool
	// Labels returns the labels of the object held under key when the
	// form knows them without viewing it; when ok is false the store views
	// the object and reads them there. Stores match label selectors on
	// them, so that a list decodes only the objects it returns. It must not
	// block.
	Labels(key string, held any) (set *labelset.Set, ok bool)
	// Retier is called by the store's Sweep, outside its lock, for every
	// key: it returns what the store should hold for key instead of held
	// (the same object in another tier), and false to keep held. The store
	// swaps only if key still holds held.
	Retier(key string, held any) (next any, ok bool)
	// SweepPass is called before each walk of a Sweep over every key,
	// pass 0 first, and reports whether to walk (again): a form with a
	// memory budget may need a second round of its clock.
	SweepPass(pass int) bool
	// RecordCodec returns the codec that writes a restart snapshot's
	// records for objects of example's type, and whether held values are
	// that codec's encodings already (else they are objects to encode).
	RecordCodec(example runtime.Object) (codec *compact.Codec, encoded bool, err error)
}

// Plain is the form of a store that keeps objects as they are: the
// default.
type Plain struct{}

// Hold keeps obj itself.
func (Plain) Hold(_ string, obj any) (any, error) { return obj, nil }

// HoldAhead keeps obj itself.
func (Plain) HoldAhead(_ string, obj any) (any, error) { return obj, nil }

// View returns held, the object itself.
func (Plain) View(_ string, held any, _ bool) (any, error) { return held, nil }

// Labels are read from the object itself.
func (Plain) Labels(string, any) (*labelset.Set, bool) { return nil, false }

// Retier keeps every object as it is: plain objects have one tier.
func (Plain) Retier(string, any) (any, bool) { return nil, false }

// SweepPass walks once: plain objects have one tier.
func (Plain) SweepPass(pass int) bool { return pass == 0 }

// Drop keeps nothing to drop.
func (Plain) Drop(string) {}

// InPlace is true: held values are the objects.
func (Plain) InPlace() bool { return true }

// RecordCodec is a codec of example's type: held objects are encoded for
// a snapshot.
func (Plain) RecordCodec(example runtime.Object) (*compact.Codec, bool, error) {
	c, err := compact.NewCodec(example, compact.Options{})
	return c, false, err
}

// HoldError is a form's refusal of one object.
func HoldError(key string, err error) error {
	return fmt.Errorf("object %q not stored: %w", key, err)
}

// View returns the object for a held value through f; false when the form
// failed, which is reported, and the object is then left out of the read.
func View(f Form, key string, held any, keep bool) (any, bool) {
	obj, err := f.View(key, held, keep)
	if err != nil {
		utilruntime.HandleErrorWithContext(context.TODO(), err, "Stored object could not be read back, left out", "key", key)
		return nil, false
	}
	return obj, true
}
