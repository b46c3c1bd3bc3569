package store

import (
	"k8s.io/apimachinery/pkg/labels"

	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/hashmap"
	"github.com/openinformer/cache/internal/labelset"
	"github.com/openinformer/cache/internal/objmeta"
)

// Selecting is a store whose lists match a label selector before they read
// the objects: a store in a form that keeps labels apart (compact storage)
// then views, and so decodes, only the objects it returns. Listers reach
// it through this interface (the root's ListAll and ListAllByNamespace).
//
// Both return the matching objects in the order the store lists them.
// An object whose metadata cannot be read ends the list with the
// accessor's error and the objects matched before it, as a lister's scan
// does; IndexSelect's errors in finding the index's members come as an
// *IndexLookupError, before any object is read.
type Selecting interface {
	ListSelect(sel labels.Selector) ([]any, error)
	IndexSelect(indexName string, obj any, sel labels.Selector) ([]any, error)
}

var _ Selecting = (*Map)(nil)

// IndexLookupError is IndexSelect's failure to find an index's members
// (no such index, or its function failed on the object asked with): a
// lister then scans the whole store instead, as with Index's errors.
type IndexLookupError struct{ Err error }

func (e *IndexLookupError) Error() string { return e.Err.Error() }

// Unwrap is the index's error.
func (e *IndexLookupError) Unwrap() error { return e.Err }

// ListSelect returns the objects whose labels sel matches, from one
// consistent state.
func (s *Map) ListSelect(sel labels.Selector) ([]any, error) {
	if s.form.InPlace() {
		return s.newSelection(sel).ofObjects(s.List())
	}
	items := s.freezeItems()
	c := s.newSelection(sel)
	items.Range(c.visit)
	return c.objs, c.err
}

// IndexSelect returns the objects whose labels sel matches among those
// sharing any of obj's values in the named index, each once.
func (s *Map) IndexSelect(indexName string, obj any, sel labels.Selector) ([]any, error) {
	if s.form.InPlace() {
		objs, err := s.Index(indexName, obj)
		if err != nil {
			return nil, &IndexLookupError{err}
		}
		return s.newSelection(sel).ofObjects(objs)
	}
	set := s.indexers.Load()
	fn, ok := set.funcs[indexName]
	if !ok {
		return nil, &IndexLookupError{indexMissingError(indexName)}
	}
	vals, err := fn(obj)
	if err != nil {
		return nil, &IndexLookupError{err}
	}
	items, groups := s.freezeGroups(set.pos[indexName], vals)
	c := s.newSelection(sel)
	visit := c.visitKey(items)
	if len(groups) > 1 {
		visit = c.visitOnce(visit)
	}
	for _, members := range groups {
		members.Range(func(key string, _ struct{}) bool { return visit(key) })
		if c.err != nil {
			break
		}
	}
	return c.objs, c.err
}

// freezeItems returns the current items, frozen to be walked without the
// lock: selecting views objects, which may decode.
func (s *Map) freezeItems() hashmap.Map[any] {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = true
	return s.items
}

// freezeGroups returns the current items and the members of each of vals
// in index i, frozen.
func (s *Map) freezeGroups(i int, vals []string) (hashmap.Map[any], []keySet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = true
	groups := make([]keySet, 0, len(vals))
	for _, v := range vals {
		if members, ok := s.indexes[i].Get(v); ok {
			groups = append(groups, members)
		}
	}
	return s.items, groups
}

// selection is one selecting read: the objects matched so far and the
// error that ended it. Entries sharing one interned label set (a
// ReplicaSet's pods) are matched once between them.
type selection struct {
	s     *Map
	sel   labels.Selector
	every bool
	memo  map[*labelset.Set]bool
	objs  []any
	err   error
}

func (s *Map) newSelection(sel labels.Selector) *selection {
	return &selection{s: s, sel: sel, every: sel.Empty()}
}

// ofObjects selects among objects already read.
func (c *selection) ofObjects(objs []any) ([]any, error) {
	if c.every {
		return objs, nil
	}
	c.objs = objs[:0:0]
	for _, obj := range objs {
		if !c.add(obj) {
			break
		}
	}
	return c.objs, c.err
}

// visit selects key's held value, viewing it only if its labels, where
// the form keeps them, match. It returns false once the read has failed.
func (c *selection) visit(key string, held any) bool {
	if set, ok := c.s.form.Labels(key, held); ok || c.every {
		if ok && !c.matches(set) {
			return true
		}
		if obj, ok := form.View(c.s.form, key, held, true); ok {
			c.objs = append(c.objs, obj)
		}
		return true
	}
	// Labels unknown (an object adopted from a restart snapshot and not
	// read since): viewing it records them for the next read.
	obj, ok := form.View(c.s.form, key, held, false)
	return !ok || c.add(obj)
}

// visitKey visits each key's held value in items.
func (c *selection) visitKey(items hashmap.Map[any]) func(string) bool {
	return func(key string) bool {
		held, ok := items.Get(key)
		return !ok || c.visit(key, held)
	}
}

// visitOnce is visit for keys that may come more than once.
func (c *selection) visitOnce(visit func(string) bool) func(string) bool {
	seen := map[string]struct{}{}
	return func(key string) bool {
		if _, dup := seen[key]; dup {
			return true
		}
		seen[key] = struct{}{}
		return visit(key)
	}
}

// matches reports whether set matches, once per distinct set.
func (c *selection) matches(set *labelset.Set) bool {
	if ok, seen := c.memo[set]; seen {
		return ok
	}
	if c.memo == nil {
		c.memo = make(map[*labelset.Set]bool, 8)
	}
	ok := c.sel.Matches(set)
	c.memo[set] = ok
	return ok
}

// add selects obj by its own labels; false ends the read with the error
// of an object without readable metadata.
func (c *selection) add(obj any) bool {
	if c.every {
		c.objs = append(c.objs, obj)
		return true
	}
	m, err := objmeta.Listed(obj)
	if err != nil {
		c.err = err
		return false
	}
	if c.sel.Matches(labels.Set(m.GetLabels())) {
		c.objs = append(c.objs, obj)
	}
	return true
}
