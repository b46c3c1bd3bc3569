package cache

import (
	"slices"
	"strings"
)

// A store whose form encodes objects (compact storage) can take the objects
// of a watch-list stream in its held form as they arrive, so that the
// decoded initial list never lives whole: the stream's buffer keeps each
// object encoded, with its index values, the queue's ReplacedAll carries
// those entries, the store adopts them without encoding or decoding again,
// and the informer's fan-out decodes each one (or takes it from the hot
// cache) only as it hands it to the handlers, a chunk at a time, or has
// the handlers' listeners decode it (see heldBox). Stores
// that hold objects as they are never take this path: there is nothing to
// gain.

// preheld is an object already in its store's held form, with its store
// key: what a compact informer's watch-list buffer keeps of each object.
// It is 40 B (a 48 B box in the buffer's items) because everything but the
// key and the encoding sits behind index, which every object whose only
// index values are its key's namespace shares (see heldIndex.keyed).
type preheld struct {
	key   string
	held  any
	index *heldIndex
}

// preholdFunc returns obj, already transformed, as a preheld, or the
// error that refuses it alone.
type preholdFunc func(obj any) (preheld, error)

// preholdingStore is a store that can hold objects ahead of a Replace:
// this package's. Its preholder is nil when it holds objects as they are.
type preholdingStore interface {
	preholder() preholdFunc
}

var _ preholdingStore = &cache{}

// preholder returns the store's preholdFunc, nil when its form holds
// objects in place: there is nothing to gain.
func (c *cache) preholder() preholdFunc {
	if c.storage.form.inPlace() {
		return nil
	}
	return func(obj any) (preheld, error) {
		key, err := c.keyOf(obj)
		if err != nil {
			return preheld{}, err
		}
		held, err := c.storage.holdAhead(key, obj)
		if err != nil {
			return preheld{}, err
		}
		return c.storage.preheld(key, held, c.storage.indexers.Load().heldValues(key, obj)), nil
	}
}

// preheld returns key's held value with its index values h, computed for
// h.set: behind the store's shared heldIndex when h is that one's for key
// (namespace values only, read from the key), else behind a copy of h.
func (s *threadSafeMap) preheld(key string, held any, h heldIndex) preheld {
	h.form = s.form
	if h.vals != nil || h.fails != nil || !h.namespaced || h.namespace != keyNamespace(key) {
		return preheld{key: key, held: held, index: &h}
	}
	shared := s.sharedHeld.Load()
	if shared == nil || shared.set != h.set || shared.form != h.form {
		shared = &heldIndex{set: h.set, form: h.form, namespaced: true, keyed: true}
		s.sharedHeld.Store(shared)
	}
	return preheld{key: key, held: held, index: shared}
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

// view reads p back, into the form's cache of decoded objects if keep.
func (p preheld) view(keep bool) (any, bool) {
	return viewHeld(p.index.form, p.key, p.held, keep)
}

// adoptHeld is, for a Replace, obj's key and held value if obj is held
// already: transformed and keyed when it was held, and adopted by the
// form as it is.
func (c *cache) adoptHeld(obj any) (key string, held any, ok bool, err error) {
	p, ok := obj.(preheld)
	if !ok {
		return "", nil, false, nil
	}
	held, err = c.storage.hold(p.key, p.held)
	return p.key, held, true, err
}

// collectListed is collect for an object of a Replace's list, which may be
// held already. A held object's values are adopted when they were computed
// for the builder's indexes; otherwise (indexers added since it was held,
// or no values) it is read back, like a stored item, and indexed afresh.
func (b *indexBuilder) collectListed(key string, obj interface{}) error {
	p, ok := obj.(preheld)
	switch {
	case !ok:
		return b.collect(key, obj)
	case p.index != nil && p.index.set == b.set && b.from == 0:
		return b.adopt(key, p.index)
	}
	if obj, ok = p.view(false); !ok {
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
// preheld), and the store's form, which reads the object back. A heldIndex
// with no set holds no values.
type heldIndex struct {
	set *indexerSet
	// form is the store's.
	form storedForm
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
func (set *indexerSet) heldValues(key string, obj interface{}) heldIndex {
	var buf [4][]string
	vals, fails := set.values(buf[:0], key, obj)
	h := heldIndex{set: set, fails: fails}
	if m, err := accessor(obj); err == nil {
		h.namespace, h.namespaced = m.GetNamespace(), true
	}
	if slices.ContainsFunc(vals, func(v []string) bool { return v != nil }) {
		h.vals = slices.Clone(vals)
	}
	return h
}
