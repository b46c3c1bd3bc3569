package store

import (
	"context"
	"fmt"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/hashmap"
)

// Replace swaps the whole content for items and sets the resource version.
// An index function that fails on an item leaves it out of that index only
// (client-go panics); one the store's form refuses is left out, reported
// and counted.
func (s *Map) Replace(items map[string]interface{}, resourceVersion string) {
	e := hashmap.NewEpoch()
	m := hashmap.Sized[any](e, len(items))
	for key, obj := range items {
		held, err := s.hold(key, obj)
		if err != nil {
			s.objectErrors.Inc()
			utilruntime.HandleErrorWithContext(context.TODO(), err, "Object not stored")
			continue
		}
		m.Set(e, key, held)
	}
	s.replace(m, e, resourceVersion, listOrder{})
}

// replace makes items, built in epoch e and seen by no one else, the new
// content, and returns the content it replaced. The indexes are built
// before the lock is taken (if the indexers change meanwhile they are built
// again), so readers and writers are held up only for the swap. Both the
// old and the new content are frozen: the caller may read them freely,
// through view.
func (s *Map) replace(items hashmap.Map[any], e hashmap.Epoch, rv string, order listOrder) hashmap.Map[any] {
	for {
		set := s.indexers.Load()
		b := newIndexBuilder(set, 0, items.Len(), true, s.form)
		indexes, _ := b.buildFrom(items, e, order)
		s.mu.Lock()
		if s.indexers.Load() != set {
			s.mu.Unlock()
			continue
		}
		before := s.items
		s.items, s.indexes, s.epoch = items, indexes, e
		s.frozen = true
		s.recordRVLocked(storeRV{rv: rv, set: true})
		s.mu.Unlock()
		s.reportIndexFailures(b.fails)
		s.dropGone(before, items)
		return before
	}
}

// dropGone tells the form about every key of before that items lacks.
func (s *Map) dropGone(before, items hashmap.Map[any]) {
	if s.form.InPlace() {
		return
	}
	before.Range(func(key string, _ any) bool {
		if _, kept := items.Get(key); !kept {
			s.form.Drop(key)
		}
		return true
	})
}

// AddIndexers adds index functions and indexes the stored items with them.
// A name already in use is a conflict and nothing is added; so is an index
// function that fails on a stored item.
func (s *Map) AddIndexers(newIndexers clientcache.Indexers) error {
	if len(newIndexers) == 0 {
		return nil
	}
	for {
		if done, err := s.tryAddIndexers(newIndexers); done {
			return err
		}
	}
}

// tryAddIndexers is one attempt of AddIndexers; it is not done when a
// write landed while the new indexes were built outside the lock.
func (s *Map) tryAddIndexers(newIndexers clientcache.Indexers) (done bool, err error) {
	s.lockForWrite()
	defer s.mu.Unlock()
	cur := s.indexers.Load()
	if common := sets.KeySet(cur.funcs).Intersection(sets.KeySet(newIndexers)); common.Len() > 0 {
		return true, fmt.Errorf("indexer conflict: %v", common)
	}
	next, items := cur.with(newIndexers), s.items
	added, err := s.buildIndexesLocked(next, len(cur.fns), items)
	if s.items != items || s.indexers.Load() != cur {
		return false, nil
	}
	if err == nil {
		s.indexes = append(append([]valueIndex(nil), s.indexes...), added...)
		s.indexers.Store(next)
	}
	return true, err
}

// buildIndexesLocked builds set's indexes from position from on over
// items. Unless the form is in place it releases the lock meanwhile, items frozen, since
// reading them back may decode; it holds the lock again when it returns.
func (s *Map) buildIndexesLocked(set *IndexerSet, from int, items hashmap.Map[any]) ([]valueIndex, error) {
	e := s.epoch
	if !s.form.InPlace() {
		s.frozen = true
		s.mu.Unlock()
		defer s.lockForWrite()
	}
	return newIndexBuilder(set, from, items.Len(), false, s.form).buildFrom(items, e, listOrder{})
}

// Replacement is what ReplaceList stored: the key and the object
// (transformed) of each object kept, in list order, and the content
// replaced and the new one, both frozen so that the caller can compare
// them without the lock. It is the change record of a relist.
type Replacement struct {
	m             *Map
	keys          []string
	objs          []any
	before, after hashmap.Map[any]
}

// Len is the number of objects stored.
func (r *Replacement) Len() int { return len(r.keys) }

// Object is the i-th object stored, in list order, with its key.
func (r *Replacement) Object(i int) (key string, obj any) { return r.keys[i], r.objs[i] }

// Before is the object key held before the replacement.
func (r *Replacement) Before(key string) (any, bool) {
	held, existed := r.before.Get(key)
	if !existed {
		return nil, false
	}
	return r.m.ViewOld(key, held)
}

// Gone calls yield with every key the replacement did not keep, and the
// object it held (a key whose object cannot be read back is left out,
// reported by the form).
func (r *Replacement) Gone(yield func(key string, old any)) {
	if r.before.Len() == 0 {
		return
	}
	r.before.Range(func(key string, held any) bool {
		if _, listed := r.after.Get(key); !listed {
			if old, ok := r.m.ViewOld(key, held); ok {
				yield(key, old)
			}
		}
		return true
	})
}

// Prepare returns the key of a listed object and the object to store (the
// store's transform applied), or the error that leaves it out.
type Prepare func(obj any) (key string, stored any, err error)

// ReplaceList makes list the whole content and rv the resource version,
// and returns what it stored, and one error per object of list it left
// out. Of two objects with one key, the later wins; by name (see
// Batch.ByName), that is reported and counted (collisions.go). A Preheld
// object of list is adopted as it was held.
func (s *Map) ReplaceList(list []any, rv string, prepare Prepare, byName bool) (r Replacement, dropped []error) {
	e := hashmap.NewEpoch()
	r.m = s
	r.after = hashmap.Sized[any](e, len(list))
	r.keys = make([]string, 0, len(list))
	r.objs = make([]any, 0, len(list))
	unique := true
	var twice listedTwice
	for _, obj := range list {
		key, stored, held, err := s.storable(obj, prepare)
		if err != nil {
			s.objectErrors.Inc()
			dropped = append(dropped, err)
			continue
		}
		if _, replaced := r.after.Set(e, key, held); replaced {
			unique = false
			if byName {
				earlier := r.objs[twice.earlier(r.keys, key)]
				s.reportCollision(errListedTwice, "Object listed twice under one key; the store keeps the later", key, earlier, stored)
			}
		}
		twice.note(key, len(r.keys))
		r.keys, r.objs = append(r.keys, key), append(r.objs, stored)
	}
	order := listOrder{r.keys, r.objs}
	if !unique {
		// An earlier object under a repeated key was overwritten and must
		// not be indexed: walk the map instead.
		order = listOrder{}
	}
	r.before = s.replace(r.after, e, rv, order)
	return r, dropped
}

// storable returns obj's key, obj transformed and what the map holds for
// it.
func (s *Map) storable(obj any, prepare Prepare) (key string, stored, held any, err error) {
	if p, ok := obj.(Preheld); ok {
		held, err = s.hold(p.key, p.held)
		return p.key, obj, held, err
	}
	if key, stored, err = prepare(obj); err != nil {
		return "", nil, nil, err
	}
	if held, err = s.hold(key, stored); err != nil {
		return "", nil, nil, err
	}
	return key, stored, held, nil
}
