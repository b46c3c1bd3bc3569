package cache

import (
	"context"
	"fmt"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/openinformer/cache/internal/hashmap"
)

// Replace swaps the whole content for items and sets the resource version.
// An index function that fails on an item leaves it out of that index only
// (client-go panics); one the store's form refuses is left out, reported
// and counted.
func (s *threadSafeMap) Replace(items map[string]interface{}, resourceVersion string) {
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
func (s *threadSafeMap) replace(items hashmap.Map[any], e hashmap.Epoch, rv string, order listOrder) hashmap.Map[any] {
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
func (s *threadSafeMap) dropGone(before, items hashmap.Map[any]) {
	if s.form.inPlace() {
		return
	}
	before.Range(func(key string, _ any) bool {
		if _, kept := items.Get(key); !kept {
			s.form.drop(key)
		}
		return true
	})
}

// AddIndexers adds index functions and indexes the stored items with them.
// A name already in use is a conflict and nothing is added; so is an index
// function that fails on a stored item.
func (s *threadSafeMap) AddIndexers(newIndexers Indexers) error {
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
func (s *threadSafeMap) tryAddIndexers(newIndexers Indexers) (done bool, err error) {
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
func (s *threadSafeMap) buildIndexesLocked(set *indexerSet, from int, items hashmap.Map[any]) ([]valueIndex, error) {
	e := s.epoch
	if !s.form.inPlace() {
		s.frozen = true
		s.mu.Unlock()
		defer s.lockForWrite()
	}
	return newIndexBuilder(set, from, items.Len(), false, s.form).buildFrom(items, e, listOrder{})
}
