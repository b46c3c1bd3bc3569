package store

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/hashmap"
	"github.com/openinformer/cache/internal/objmeta"
)

// This file holds what a store knows about its indexes apart from the
// store itself: the immutable generations of index functions, the values
// they give an object, and the builder that indexes a whole content at
// once (Replace, AddIndexers).

// keySet holds the store keys sharing one index value. It keeps no
// objects, so a write that leaves an object's index values alone leaves the
// index alone too; reads find the objects in the items of the same state.
type keySet = hashmap.Map[struct{}]

// valueIndex maps each value of one index to its keySet.
type valueIndex = hashmap.Map[keySet]

// IndexerSet is one immutable generation of a store's index functions.
// AddIndexers publishes a new generation, so readers and GetIndexers callers
// never see a map that changes under them.
type IndexerSet struct {
	funcs clientcache.Indexers
	names []string
	fns   []clientcache.IndexFunc
	pos   map[string]int
	// byNamespace marks MetaNamespaceIndexFunc, which writes evaluate
	// directly: a namespace needs no slice, and that saves an allocation
	// per write on nearly every informer.
	byNamespace []bool
	// isNamespace recognises namespace index functions (Config).
	isNamespace func(clientcache.IndexFunc) bool
}

// newIndexerSet returns the first generation. Built from nil indexers, its
// funcs map is nil too, as client-go's GetIndexers returns it.
func newIndexerSet(indexers clientcache.Indexers, isNamespace func(clientcache.IndexFunc) bool) *IndexerSet {
	if isNamespace == nil {
		isNamespace = func(clientcache.IndexFunc) bool { return false }
	}
	set := (&IndexerSet{pos: map[string]int{}, isNamespace: isNamespace}).with(indexers)
	if indexers == nil {
		set.funcs = nil
	}
	return set
}

// with returns a new generation holding set's indexers followed by more,
// the latter in name order.
func (set *IndexerSet) with(more clientcache.Indexers) *IndexerSet {
	next := &IndexerSet{
		funcs:       make(clientcache.Indexers, len(set.funcs)+len(more)),
		names:       append([]string(nil), set.names...),
		fns:         append([]clientcache.IndexFunc(nil), set.fns...),
		pos:         make(map[string]int, len(set.funcs)+len(more)),
		byNamespace: append([]bool(nil), set.byNamespace...),
		isNamespace: set.isNamespace,
	}
	for name, fn := range set.funcs {
		next.funcs[name] = fn
		next.pos[name] = set.pos[name]
	}
	for _, name := range sets.List(sets.KeySet(more)) {
		next.funcs[name] = more[name]
		next.pos[name] = len(next.names)
		next.names = append(next.names, name)
		next.fns = append(next.fns, more[name])
		next.byNamespace = append(next.byNamespace, set.isNamespace(more[name]))
	}
	return next
}

// namespaceOf is index i's value for obj when it is a namespace index. On
// failure the error is the index function's own, as without the fast path.
func (set *IndexerSet) namespaceOf(i int, key string, obj interface{}) (string, error) {
	m, err := objmeta.Accessor(obj)
	if err != nil {
		_, err = set.fns[i](obj)
		return "", indexEntryError(key, set.names[i], err)
	}
	return m.GetNamespace(), nil
}

// Values appends obj's values for every index to dst. A nil object, which a
// ThreadSafeStore may hold, has no values. Namespace indexes get no slice,
// only the check that obj has a namespace. An index whose function fails on
// obj gets no values, so that obj is left out of that index only; the
// failures are returned.
func (set *IndexerSet) Values(dst [][]string, key string, obj interface{}) ([][]string, []error) {
	var fails []error
	for i, fn := range set.fns {
		var vals []string
		var err error
		switch {
		case obj == nil:
		case set.byNamespace[i]:
			_, err = set.namespaceOf(i, key, obj)
		default:
			if vals, err = fn(obj); err != nil {
				err = indexEntryError(key, set.names[i], err)
			}
		}
		if err != nil {
			fails, vals = append(fails, err), nil
		}
		dst = append(dst, vals)
	}
	return dst, fails
}

// indexError is an index function's failure on one stored object.
type indexError struct {
	key, index string
	err        error
}

func (e *indexError) Error() string {
	return fmt.Sprintf("unable to calculate an index entry for key %q on index %q: %v", e.key, e.index, e.err)
}

func (e *indexError) Unwrap() error { return e.err }

func indexEntryError(key, index string, err error) error {
	return &indexError{key: key, index: index, err: err}
}

func indexMissingError(name string) error {
	return fmt.Errorf("Index with name %s does not exist", name)
}

// listOrder is the content of a Replace in the order it was listed, each
// key once, objects possibly held already (see collectListed); its zero
// value means unknown.
type listOrder struct {
	keys []string
	objs []interface{}
}

// buildFrom indexes every item (read back through the builder's form), in
// epoch e. Given the list order, it walks
// the objects in the order they were listed (and, from a LIST, allocated),
// which reads memory sequentially instead of in hash order. Each index's
// entries are collected and counted first, so that every key set is laid
// out once for its final size.
func (b *indexBuilder) buildFrom(items hashmap.Map[any], e hashmap.Epoch, order listOrder) ([]valueIndex, error) {
	if order.keys != nil {
		for i, key := range order.keys {
			if err := b.collectListed(key, order.objs[i]); err != nil {
				return nil, err
			}
		}
		return b.build(e), nil
	}
	var err error
	items.Range(func(key string, held interface{}) bool {
		obj, ok := form.View(b.form, key, held, false)
		if ok {
			err = b.collect(key, obj)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return b.build(e), nil
}

// indexBuilder gathers the entries of new indexes (set's, from position
// from on) before building them; entries and counts are by position - from.
// A lenient builder leaves an object out of an index whose function fails
// on it and keeps the failures in fails; a strict one stops at the first.
type indexBuilder struct {
	set     *IndexerSet
	from    int
	entries [][]indexEntry
	counts  []map[string]int
	lenient bool
	fails   []error
	// form is the store's, through which items are read back.
	form form.Form
}

type indexEntry struct{ value, key string }

func newIndexBuilder(set *IndexerSet, from, size int, lenient bool, form form.Form) *indexBuilder {
	n := len(set.fns) - from
	b := &indexBuilder{set: set, from: from, entries: make([][]indexEntry, n), counts: make([]map[string]int, n), lenient: lenient, form: form}
	for i := range n {
		b.entries[i] = make([]indexEntry, 0, size)
		b.counts[i] = map[string]int{}
	}
	return b
}

// collect records obj's entries in every index.
func (b *indexBuilder) collect(key string, obj interface{}) error {
	if obj == nil {
		return nil
	}
	for i := range b.entries {
		if err := b.collectOne(i, key, obj); err != nil {
			if err = b.fail(err); err != nil {
				return err
			}
		}
	}
	return nil
}

// fail is err for a strict builder; a lenient one keeps it and goes on.
func (b *indexBuilder) fail(err error) error {
	if !b.lenient {
		return err
	}
	b.fails = append(b.fails, err)
	return nil
}

// collectOne records obj's entries in index i, all or none.
func (b *indexBuilder) collectOne(i int, key string, obj interface{}) error {
	pos := b.from + i
	if b.set.byNamespace[pos] {
		// The namespace is read in place: no slice per object.
		ns, err := b.set.namespaceOf(pos, key, obj)
		if err != nil {
			return err
		}
		b.record(i, ns, key)
		return nil
	}
	vals, err := b.set.fns[pos](obj)
	if err != nil {
		return indexEntryError(key, b.set.names[pos], err)
	}
	for _, v := range vals {
		b.record(i, v, key)
	}
	return nil
}

func (b *indexBuilder) record(i int, value, key string) {
	b.entries[i] = append(b.entries[i], indexEntry{value, key})
	b.counts[i][value]++
}

// build makes the indexes, each key set sized for its entries.
func (b *indexBuilder) build(e hashmap.Epoch) []valueIndex {
	indexes := make([]valueIndex, len(b.entries))
	for i := range indexes {
		indexes[i] = hashmap.Sized[keySet](e, len(b.counts[i]))
		for value, n := range b.counts[i] {
			indexes[i].Set(e, value, hashmap.Sized[struct{}](e, n))
		}
		for _, en := range b.entries[i] {
			indexes[i].Existing(e, en.value).Set(e, en.key, struct{}{})
		}
	}
	return indexes
}
