package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/openinformer/cache/internal/hashmap"
)

// Add stores obj under key; it is Update.
func (s *threadSafeMap) Add(key string, obj interface{}) {
	s.Update(key, obj)
}

// Update stores obj under key. An index function that fails on obj leaves
// it out of that index only (client-go panics); see reportIndexFailures.
func (s *threadSafeMap) Update(key string, obj interface{}) {
	if err := s.put(key, obj); err != nil {
		s.reportRefused(err)
	}
}

// reportRefused reports and counts an object the store's form refused.
func (s *threadSafeMap) reportRefused(err error) {
	s.objectErrors.Inc()
	utilruntime.HandleErrorWithContext(context.TODO(), err, "Object not stored")
}

// put stores obj under key, in every index whose function succeeds on it.
// It fails only when the store's form refuses obj, and then stores nothing.
func (s *threadSafeMap) put(key string, obj interface{}) error {
	held, err := s.hold(key, obj)
	if err != nil {
		return err
	}
	var buf [4][]string
	set := s.indexers.Load()
	vals, fails := set.values(buf[:0], key, obj)
	rv := rvOf(obj)
	old := s.lockForWriteOf(key)
	if cur := s.indexers.Load(); cur != set {
		set = cur
		vals, fails = set.values(buf[:0], key, obj)
	}
	s.putLocked(set, key, held, obj, vals, old)
	s.recordRVLocked(rv)
	s.mu.Unlock()
	s.reportIndexFailures(fails)
	return nil
}

// reportIndexFailures reports and counts each index entry a write left out.
// The write itself succeeded: one object's bad index value must cost
// neither that object's other indexes nor any other object.
func (s *threadSafeMap) reportIndexFailures(fails []error) {
	for _, err := range fails {
		s.objectErrors.Inc()
		var ie *indexError
		if errors.As(err, &ie) {
			utilruntime.HandleErrorWithContext(context.TODO(), ie.err, "Object stored but left out of an index", "key", ie.key, "index", ie.index)
		}
	}
}

// putLocked makes held, the form of obj, key's item and moves key in the
// indexes to vals, obj's values. old is key's prior when the store has a
// form (see lockForWriteOf).
func (s *threadSafeMap) putLocked(set *indexerSet, key string, held, obj interface{}, vals [][]string, old prior) {
	h := hashmap.Hash(key)
	prev, existed := s.items.SetHashed(s.epoch, h, key, held)
	old = s.priorLocked(prev, existed, old)
	for i := range s.indexes {
		s.reindexLocked(set, i, key, h, old, obj, vals[i])
	}
}

// reindexLocked moves key, whose hash is h, within index i from the values
// of old (if it existed) to vals. Should the index function now fail on the stored
// object, or the form fail to read it back, the key is found by a scan
// instead, so a write never fails half-way.
func (s *threadSafeMap) reindexLocked(set *indexerSet, i int, key string, h uint64, old prior, obj interface{}, vals []string) {
	idx := &s.indexes[i]
	if old.existed && !old.known {
		s.removeEverywhereLocked(idx, key, h)
		old = prior{}
	}
	if set.byNamespace[i] {
		s.reindexNamespaceLocked(idx, key, h, old, obj)
		return
	}
	if old.existed && old.obj != nil {
		oldVals, err := set.fns[i](old.obj)
		switch {
		case err != nil:
			s.removeEverywhereLocked(idx, key, h)
		case slices.Equal(oldVals, vals):
			return
		default:
			for _, v := range oldVals {
				s.removeFromValueLocked(idx, v, key, h)
			}
		}
	}
	for _, v := range vals {
		s.addToValueLocked(idx, v, key, h)
	}
}

// reindexNamespaceLocked is reindexLocked for MetaNamespaceIndexFunc. An
// obj that is nil or has no namespace is in no namespace.
func (s *threadSafeMap) reindexNamespaceLocked(idx *valueIndex, key string, h uint64, old prior, obj interface{}) {
	var ns string
	indexed := false
	if obj != nil {
		if m, err := accessor(obj); err == nil {
			ns, indexed = m.GetNamespace(), true
		}
	}
	if old.existed && old.obj != nil {
		oldMeta, err := accessor(old.obj)
		switch {
		case err != nil:
			s.removeEverywhereLocked(idx, key, h)
		case indexed && ns == oldMeta.GetNamespace():
			return
		default:
			s.removeFromValueLocked(idx, oldMeta.GetNamespace(), key, h)
		}
	}
	if indexed {
		s.addToValueLocked(idx, ns, key, h)
	}
}

func (s *threadSafeMap) addToValueLocked(idx *valueIndex, value, key string, h uint64) {
	members, _ := idx.Ref(s.epoch, value)
	members.SetHashed(s.epoch, h, key, struct{}{})
}

func (s *threadSafeMap) removeFromValueLocked(idx *valueIndex, value, key string, h uint64) {
	members := idx.Existing(s.epoch, value)
	if members == nil {
		return
	}
	if _, ok := members.DeleteHashed(s.epoch, h, key); ok && members.Len() == 0 {
		idx.Delete(s.epoch, value)
	}
}

func (s *threadSafeMap) removeEverywhereLocked(idx *valueIndex, key string, h uint64) {
	var holding []string
	idx.Range(func(value string, members keySet) bool {
		if _, ok := members.GetHashed(h, key); ok {
			holding = append(holding, value)
		}
		return true
	})
	for _, v := range holding {
		s.removeFromValueLocked(idx, v, key, h)
	}
}

// Delete removes key; it does not change the store's resource version.
func (s *threadSafeMap) Delete(key string) {
	s.DeleteWithObject(key, nil)
}

// DeleteWithObject removes key and, if obj is a meta object, records its
// resource version even when key was absent.
func (s *threadSafeMap) DeleteWithObject(key string, obj interface{}) {
	var rv storeRV
	if obj != nil {
		rv = rvOf(obj)
	}
	old := s.lockForWriteOf(key)
	defer s.mu.Unlock()
	if s.deleteLocked(s.indexers.Load(), key, old) {
		s.dropLocked(key)
	}
	s.recordRVLocked(rv)
}

// deleteLocked removes key and reports whether it was there; old is as
// for putLocked. The caller tells the form once its write is done (see
// dropLocked).
func (s *threadSafeMap) deleteLocked(set *indexerSet, key string, old prior) bool {
	h := hashmap.Hash(key)
	prev, ok := s.items.DeleteHashed(s.epoch, h, key)
	if !ok {
		return false
	}
	old = s.priorLocked(prev, true, old)
	for i := range s.indexes {
		s.reindexLocked(set, i, key, h, old, nil, nil)
	}
	return true
}

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
			s.reportRefused(err)
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
	if s.form == nil {
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
// items. With a form it releases the lock meanwhile, items frozen, since
// reading them back may decode; it holds the lock again when it returns.
func (s *threadSafeMap) buildIndexesLocked(set *indexerSet, from int, items hashmap.Map[any]) ([]valueIndex, error) {
	e := s.epoch
	if s.form != nil {
		s.frozen = true
		s.mu.Unlock()
		defer s.lockForWrite()
	}
	return newIndexBuilder(set, from, items.Len(), false, s.form).buildFrom(items, e, listOrder{})
}
