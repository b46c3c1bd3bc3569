package store

import (
	"slices"
	"strings"

	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/objmeta"
)

// A store whose form encodes objects (compact storage) can take the objects
// of a watch-list stream in its held form as they arrive, so that the
// decoded initial list never lives whole: the stream's buffer keeps each
// object encoded, with its index values, the queue's ReplacedAll carries
// those entries, the store adopts them without encoding or decoding again,
// and the informer's fan-out decodes each one (or takes it from the hot
// cache) only as it hands it to the handlers, a chunk at a time, or has
// the handlers' listeners decode it (see form.Box). Stores
// that hold objects as they are never take this path: there is nothing to
// gain.

// Preheld is an object already in its store's held form, with its store
// key: what a compact informer's watch-list buffer keeps of each object.
// It is 40 B (a 48 B box in the buffer's items) because everything but the
// key and the encoding sits behind index, which every object whose only
// index values are its key's namespace shares (see heldIndex.keyed).
type Preheld struct {
	key   string
	held  any
	index *heldIndex
}

// Prehold returns obj, already transformed, held ahead of the Replace that
// will store it under key, with its index values; or the error that
// refuses it alone. Call it only when the form is not in place (there is
// nothing to gain otherwise).
func (s *Map) Prehold(key string, obj any) (Preheld, error) {
	held, err := s.holdAhead(key, obj)
	if err != nil {
		return Preheld{}, err
	}
	return s.preheld(key, held, s.indexers.Load().heldValues(key, obj)), nil
}

// preheld returns key's held value with its index values h, computed for
// h.set: behind the store's shared heldIndex when h is that one's for key
// (namespace values only, read from the key), else behind a copy of h.
func (s *Map) preheld(key string, held any, h heldIndex) Preheld {
	h.form = s.form
	if h.vals != nil || h.fails != nil || !h.namespaced || h.namespace != keyNamespace(key) {
		return Preheld{key: key, held: held, index: &h}
	}
	shared := s.sharedHeld.Load()
	if shared == nil || shared.set != h.set || shared.form != h.form {
		shared = &heldIndex{set: h.set, form: h.form, namespaced: true, keyed: true}
		s.sharedHeld.Store(shared)
	}
	return Preheld{key: key, held: held, index: shared}
}

// keyNamespace is the namespace MetaNamespaceKeyFunc puts in key: up to
// its first '/', none without one.
func keyNamespace(key string) string {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return ""
	}
	return ns
}

// Key is p's store key.
func (p Preheld) Key() string { return p.key }

// Held is p's held value (a compact store's encoding).
func (p Preheld) Held() any { return p.held }

// IndexSet is the generation of index functions p's values were computed
// for.
func (p Preheld) IndexSet() *IndexerSet { return p.index.set }

// IndexValues are p's values in the indexes other than namespace indexes,
// by position in IndexSet; nil when there are none.
func (p Preheld) IndexValues() [][]string { return p.index.vals }

// HeldAhead is v's held value, index generation and values when v is a
// Preheld (a staged value of a compact store), false for an object.
func HeldAhead(v any) (held any, set *IndexerSet, vals [][]string, ok bool) {
	p, ok := v.(Preheld)
	if !ok {
		return nil, nil, nil, false
	}
	return p.held, p.index.set, p.index.vals, true
}

// BoxInto makes b the box of p's object, for a listener to read back.
func (p Preheld) BoxInto(b *form.Box) { b.Fill(p.key, p.held, p.index.form) }

// View reads p back, into the form's cache of decoded objects if keep.
func (p Preheld) View(keep bool) (any, bool) {
	return form.View(p.index.form, p.key, p.held, keep)
}

// collectListed is collect for an object of a Replace's list, which may be
// held already. A held object's values are adopted when they were computed
// for the builder's indexes; otherwise (indexers added since it was held,
// or no values) it is read back, like a stored item, and indexed afresh.
func (b *indexBuilder) collectListed(key string, obj interface{}) error {
	p, ok := obj.(Preheld)
	switch {
	case !ok:
		return b.collect(key, obj)
	case p.index != nil && p.index.set == b.set && b.from == 0:
		return b.adopt(key, p.index)
	}
	if obj, ok = p.View(false); !ok {
		return nil
	}
	return b.collect(key, obj)
}

// adopt records the entries of h, computed for the builder's set, whose
// indexes it builds all (from position 0): h's positions are its own.
func (b *indexBuilder) adopt(key string, h *heldIndex) error {
	for _, err := range h.fails {
		if err = b.fail(err); err != nil {
			return err
		}
	}
	for i := range b.entries {
		switch {
		case b.set.byNamespace[i]:
			if h.namespaced {
				b.record(i, h.namespaceOf(key), key)
			}
		case h.vals != nil:
			for _, v := range h.vals[i] {
				b.record(i, v, key)
			}
		}
	}
	return nil
}

// heldIndex is an object's values in every index of set, computed ahead
// of the Replace that stores it, while the object was decoded (see
// Preheld), and the store's form, which reads the object back. A heldIndex
// with no set holds no values.
type heldIndex struct {
	set *IndexerSet
	// form is the store's.
	form form.Form
	// namespace is the value of every namespace index, when namespaced:
	// those indexes' functions read one field, so no slice is kept.
	namespace  string
	namespaced bool
	// keyed says that the namespace is the key's (keyNamespace), not
	// namespace: such a heldIndex, with no vals and no fails, is shared
	// by every such object of its store.
	keyed bool
	// vals holds the other indexes' values by position; it is nil when
	// every index is a namespace index, the common case.
	vals [][]string
	// fails are the index functions' failures on the object, reported by
	// the Replace that adopts the values, as if it had computed them.
	fails []error
}

// namespaceOf is the namespace indexes' value for the object stored
// under key.
func (h *heldIndex) namespaceOf(key string) string {
	if h.keyed {
		return keyNamespace(key)
	}
	return h.namespace
}

// heldValues returns obj's values in set's indexes, as values computes
// them. A stack buffer takes them, so that an object indexed by namespace
// only, the common case, costs no slice.
func (set *IndexerSet) heldValues(key string, obj interface{}) heldIndex {
	var buf [4][]string
	vals, fails := set.Values(buf[:0], key, obj)
	h := heldIndex{set: set, fails: fails}
	if m, err := objmeta.Accessor(obj); err == nil {
		h.namespace, h.namespaced = m.GetNamespace(), true
	}
	if slices.ContainsFunc(vals, func(v []string) bool { return v != nil }) {
		h.vals = slices.Clone(vals)
	}
	return h
}
