package store

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/openinformer/cache/internal/objmeta"
)

// A store keyed by namespace and name holds one object per key, and the
// key "x/a/b" is both namespace x's "a/b" and namespace x/a's "b". Names
// with a slash are invalid in Kubernetes, so only a faulty server or
// ListerWatcher makes two such objects; the store then keeps one, as
// client-go's does, but never silently: every write that replaces or
// deletes an object of another name under the same key, and every listed
// object whose key an earlier one of the same list had, is reported
// (utilruntime.HandleError, with the key and both names) and counted
// with the objects the store could not keep as given.

var (
	errKeyCollision = errors.New("two objects of different names have the same key")
	errListedTwice  = errors.New("a list holds two objects with the same key")
)

// sameName reports whether a and b, objects with the same key, have the
// same namespace and name, or do not both have metadata. Both were keyed
// by the store, so neither is a nil pointer: this runs on every write and
// spares the check.
func sameName(a, b any) bool {
	if a == b {
		return true
	}
	ma, ok := a.(metav1.Object)
	if !ok {
		return true
	}
	mb, ok := b.(metav1.Object)
	return !ok || (ma.GetName() == mb.GetName() && ma.GetNamespace() == mb.GetNamespace())
}

// reportCollisions reports and counts each write of a committed batch
// whose key held an object of another name just before it.
func (s *Map) reportCollisions(b *Batch) {
	for i := range b.ws {
		w := &b.ws[i]
		if w.err != nil {
			continue
		}
		if old, ok := b.before(i); ok && !sameName(old, w.obj) {
			s.reportCollision(errKeyCollision, "Object written over one of another name under the same key; the store keeps the later", w.key, old, w.obj)
		}
	}
}

// reportCollision reports and counts two objects sharing key: earlier,
// which the store no longer keeps, and later.
func (s *Map) reportCollision(err error, msg, key string, earlier, later any) {
	s.objectErrors.Inc()
	kv := []any{"key", key}
	if m, ok := objmeta.Of(earlier); ok {
		kv = append(kv, "droppedNamespace", m.GetNamespace(), "droppedName", m.GetName())
	}
	if m, ok := objmeta.Of(later); ok {
		kv = append(kv, "keptNamespace", m.GetNamespace(), "keptName", m.GetName())
	}
	utilruntime.HandleErrorWithContext(context.TODO(), err, msg, kv...)
}

// listedTwice finds, for a Replace, the earlier object of a key listed
// again: positions maps each key to its object's position in the list,
// built on the first repeat (a well-formed list has none).
type listedTwice struct {
	positions map[string]int
}

// note records that the list's object at pos has key, once a repeat has
// made positions needed.
func (l *listedTwice) note(key string, pos int) {
	if l.positions != nil {
		l.positions[key] = pos
	}
}

// earlier returns the position in keys, the keys listed so far, of the
// object listed under key.
func (l *listedTwice) earlier(keys []string, key string) int {
	if l.positions == nil {
		l.positions = make(map[string]int, len(keys))
		for i, k := range keys {
			l.positions[k] = i
		}
	}
	return l.positions[key]
}
