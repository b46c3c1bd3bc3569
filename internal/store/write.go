package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/hashmap"
	"github.com/openinformer/cache/internal/objmeta"
)

// The store's write pipeline. Every mutation but a swap of the whole
// content (Replace, replace.go) is a Batch: one
// write record per key written, prepared outside the lock and committed
// under it, all here. Add, Update, Delete and Transaction of the Store and
// of the ThreadSafeStore, and an informer's batch of deltas, differ only
// in how they fill the records and read the outcome.
//
//  1. The caller fills each write: key (or the error that refused it),
//     type, object, and the prior if it looked the key up already.
//  2. prepare, without the lock: the form holds each object; a write whose
//     key a later write of the batch writes again is superseded, since
//     only the last write per key is applied (as client-go v0.38 does); the
//     index values of the writes to apply are computed.
//  3. lockFor takes the lock with every prior current, the one protocol
//     of every write: a form in place has each prior read from the map as
//     the write changes it; any other has them read before the lock (a read
//     may decode, which must not hold up readers and writers), checked under
//     it, and read again for the keys another writer changed meanwhile (rare:
//     an informer's store has one writer).
//  4. commitLocked applies the writes and records, on each key's first
//     write, what the key held before the batch.
//  5. After unlocking: index entries left out, and objects that replaced one
//     of another name under the same key, are reported and counted.
//
// The caller then reads each write's outcome: its err, and what its key
// held just before it (before), from which an informer derives its
// changes.

// write is one key's part in a Batch.
type write struct {
	key string
	typ clientcache.TransactionType
	// obj is the caller's object: stored as held, indexed, and the source
	// of the store's resource version. A delete's obj, if any, only gives
	// the resource version.
	obj  any
	held any
	// prior is what key held before the batch; it is kept on the key's
	// first write of the batch only.
	prior Prior
	// err refuses the write, before the lock: it is not applied.
	err error
	// prev is the position of the batch's previous write of key that was
	// not refused, -1 if none; superseded marks a write that has a later
	// one, and is not applied.
	prev       int
	superseded bool
}

// applied reports whether commitLocked writes w.
func (w *write) applied() bool { return w.err == nil && !w.superseded }

// Batch is the writes of one mutation.
type Batch struct {
	ws []write
	// ByName marks a store keyed by namespace and name, in which two
	// objects of different names under one key are a collision.
	ByName bool
	// set is the generation of index functions the values were computed
	// with; vals holds write i's values in set's n indexes at
	// vals[i*n:(i+1)*n] (see valuesOf). Kept here rather than in each
	// write, for the reason given at prepare.
	set  *IndexerSet
	vals [][]string
	// last is linkByMap's, kept with the pooled batch: a busy informer's
	// batches would otherwise allocate one each.
	last map[string]int
}

// writeLinkScan is the batch size up to which prepare finds a key's
// previous write by scanning back rather than with a map.
const writeLinkScan = 16

// batchOfOne returns a batch of the single write w, with buf for its index
// values: a single Add, Update or Delete allocates nothing for its batch.
func batchOfOne(w *[1]write, buf *[4][]string) Batch {
	return Batch{ws: w[:], vals: buf[:0]}
}

var batchPool = sync.Pool{New: func() any { return new(Batch) }}

// GetBatch returns an empty pooled batch with room for n writes:
// a busy informer would otherwise allocate one for every batch.
func GetBatch(n int) *Batch {
	b := batchPool.Get().(*Batch)
	if cap(b.ws) < n {
		b.ws = make([]write, 0, n)
	}
	return b
}

// Release empties b, so that the pool pins no object, and returns it.
func (b *Batch) Release() {
	clear(b.ws[:cap(b.ws)])
	clear(b.vals[:cap(b.vals)])
	if len(b.last) > 0 {
		clear(b.last)
	}
	*b = Batch{ws: b.ws[:0], vals: b.vals[:0], last: b.last}
	batchPool.Put(b)
}

// Apply runs b through the pipeline.
func (s *Map) Apply(b *Batch) {
	if len(b.ws) == 0 {
		return
	}
	rv := s.prepare(b)
	set := s.indexers.Load()
	indexFails := b.index(set)
	s.lockFor(b)
	if cur := s.indexers.Load(); cur != set {
		indexFails = b.index(cur)
	}
	s.commitLocked(b, rv)
	s.mu.Unlock()
	s.reportIndexFailures(indexFails)
	if b.ByName {
		s.reportCollisions(b)
	}
}

// prepare checks each write's type, holds the objects written, links the
// writes of each key and returns the batch's resource version: the last
// write's object's. (It is not kept in b: a field of b that the store
// keeps would make a single write's batch escape to the heap.)
func (s *Map) prepare(b *Batch) storeRV {
	for i := range b.ws {
		w := &b.ws[i]
		if w.err != nil {
			continue
		}
		switch w.typ {
		case clientcache.TransactionTypeAdd, clientcache.TransactionTypeUpdate:
			if w.held, w.err = s.hold(w.key, w.obj); w.err != nil {
				s.objectErrors.Inc()
			}
		case clientcache.TransactionTypeDelete:
		default:
			w.err = fmt.Errorf("unknown transaction type %q", w.typ)
		}
	}
	b.link()
	for i := len(b.ws) - 1; i >= 0; i-- {
		if w := &b.ws[i]; w.err == nil {
			return rvOf(w.obj)
		}
	}
	return storeRV{}
}

// link sets each write's prev and marks the superseded ones.
func (b *Batch) link() {
	if len(b.ws) > writeLinkScan {
		b.linkByMap()
		return
	}
	for i := range b.ws {
		w := &b.ws[i]
		w.prev = -1
		if w.err != nil {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			if p := &b.ws[j]; p.err == nil && p.key == w.key {
				w.prev, p.superseded = j, true
				break
			}
		}
	}
}

func (b *Batch) linkByMap() {
	if b.last == nil {
		b.last = make(map[string]int, len(b.ws))
	}
	last := b.last
	for i := range b.ws {
		w := &b.ws[i]
		w.prev = -1
		if w.err != nil {
			continue
		}
		if j, ok := last[w.key]; ok {
			w.prev, b.ws[j].superseded = j, true
		}
		last[w.key] = i
	}
}

// Add appends a write of obj under key to b: key is the error err when
// it could not be computed, and prior what key holds if the caller looked
// it up already (the zero Prior otherwise).
func (b *Batch) Add(key string, typ clientcache.TransactionType, obj any, prior Prior, err error) {
	b.ws = append(b.ws, write{key: key, typ: typ, obj: obj, prior: prior, err: err})
}

// first returns the position of the first write of write i's key.
func (b *Batch) first(i int) int {
	for b.ws[i].prev >= 0 {
		i = b.ws[i].prev
	}
	return i
}

// before returns what write i's key held just before it (the batch's
// previous write of the key, or the key's prior) and whether that is a
// known object. Call it once the batch is committed.
func (b *Batch) before(i int) (any, bool) {
	w := &b.ws[i]
	if w.prev < 0 {
		return w.prior.obj, w.prior.known
	}
	if p := &b.ws[w.prev]; p.typ != clientcache.TransactionTypeDelete {
		return p.obj, true
	}
	return nil, false
}

// index computes, with set, the values of every write to apply, and
// returns the index entries left out, to report once the lock is released.
// (They are not kept in b, for the reason given at prepare.)
func (b *Batch) index(set *IndexerSet) (indexFails []error) {
	n := len(set.fns)
	b.set = set
	if need := len(b.ws) * n; need > cap(b.vals) {
		b.vals = make([][]string, need)
	} else {
		b.vals = b.vals[:need]
		clear(b.vals)
	}
	for i := range b.ws {
		w := &b.ws[i]
		if !w.applied() || w.typ == clientcache.TransactionTypeDelete {
			continue
		}
		_, fails := set.Values(b.vals[i*n:i*n:(i+1)*n], w.key, w.obj)
		indexFails = append(indexFails, fails...)
	}
	return indexFails
}

// valuesOf returns write i's index values.
func (b *Batch) valuesOf(i int) [][]string {
	n := len(b.set.fns)
	return b.vals[i*n : (i+1)*n]
}

// lockFor takes the write lock for b with every prior current (see the
// pipeline above).
func (s *Map) lockFor(b *Batch) {
	if s.form.InPlace() {
		s.lockForWrite()
		return
	}
	for {
		s.readPriors(b)
		s.lockForWrite()
		if s.priorsHoldLocked(b) {
			return
		}
		s.mu.Unlock()
	}
}

// readPriors reads the prior of each key whose first write has none:
// what the map holds, under one lock, viewed after releasing it.
func (s *Map) readPriors(b *Batch) {
	s.mu.Lock()
	for i := range b.ws {
		if w := &b.ws[i]; w.err == nil && w.prev < 0 && !w.prior.read {
			w.prior.held, w.prior.existed = s.items.Get(w.key)
		}
	}
	s.mu.Unlock()
	for i := range b.ws {
		if w := &b.ws[i]; w.err == nil && w.prev < 0 && !w.prior.read {
			w.prior = s.viewPrior(w.key, w.prior.held, w.prior.existed)
		}
	}
}

// priorsHoldLocked reports whether every key still holds its prior, and
// forgets those that do not, for readPriors to read again.
func (s *Map) priorsHoldLocked(b *Batch) bool {
	hold := true
	for i := range b.ws {
		w := &b.ws[i]
		if w.err == nil && w.prev < 0 && !s.holdsLocked(w.key, w.prior) {
			w.prior, hold = Prior{}, false
		}
	}
	return hold
}

// commitLocked applies every write of b that is neither refused nor
// superseded, and records rv, the batch's resource version.
func (s *Map) commitLocked(b *Batch, rv storeRV) {
	for i := range b.ws {
		w := &b.ws[i]
		if !w.applied() {
			continue
		}
		p := &b.ws[b.first(i)].prior
		if w.typ == clientcache.TransactionTypeDelete {
			s.deleteLocked(b.set, w.key, p)
		} else {
			s.putLocked(b.set, w, b.valuesOf(i), p)
		}
	}
	s.recordRVLocked(rv)
}

// putLocked makes w's held value its key's item and moves the key in the
// indexes to vals, w's values. p is the key's prior: read before the lock,
// or, with a form in place, read now from what the write replaces.
func (s *Map) putLocked(set *IndexerSet, w *write, vals [][]string, p *Prior) {
	h := hashmap.Hash(w.key)
	prev, existed := s.items.SetHashed(s.epoch, h, w.key, w.held)
	if s.form.InPlace() {
		*p = heldPrior(prev, existed)
	}
	for i := range s.indexes {
		s.reindexLocked(set, i, w.key, h, *p, w.obj, vals[i])
	}
}

// deleteLocked removes key, with prior p as for putLocked, and tells the
// form: a key is written once per batch, so it stays absent.
func (s *Map) deleteLocked(set *IndexerSet, key string, p *Prior) {
	h := hashmap.Hash(key)
	prev, existed := s.items.DeleteHashed(s.epoch, h, key)
	if s.form.InPlace() {
		*p = heldPrior(prev, existed)
	}
	if existed {
		for i := range s.indexes {
			s.reindexLocked(set, i, key, h, *p, nil, nil)
		}
	}
	// Even if key was absent: a superseded write of the batch may have held
	// a value for it.
	s.form.Drop(key)
}

// reportIndexFailures reports and counts each index entry a write left out.
// The write itself succeeded: one object's bad index value must cost
// neither that object's other indexes nor any other object.
func (s *Map) reportIndexFailures(fails []error) {
	for _, err := range fails {
		s.objectErrors.Inc()
		var ie *indexError
		if errors.As(err, &ie) {
			utilruntime.HandleErrorWithContext(context.TODO(), ie.err, "Object stored but left out of an index", "key", ie.key, "index", ie.index)
		}
	}
}

// reindexLocked moves key, whose hash is h, within index i from the values
// of old (if it existed) to vals. Should the index function now fail on the stored
// object, or the form fail to read it back, the key is found by a scan
// instead, so a write never fails half-way.
func (s *Map) reindexLocked(set *IndexerSet, i int, key string, h uint64, old Prior, obj interface{}, vals []string) {
	idx := &s.indexes[i]
	if old.existed && !old.known {
		s.removeEverywhereLocked(idx, key, h)
		old = Prior{}
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
func (s *Map) reindexNamespaceLocked(idx *valueIndex, key string, h uint64, old Prior, obj interface{}) {
	var ns string
	indexed := false
	if obj != nil {
		if m, err := objmeta.Accessor(obj); err == nil {
			ns, indexed = m.GetNamespace(), true
		}
	}
	if old.existed && old.obj != nil {
		oldMeta, err := objmeta.Accessor(old.obj)
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

func (s *Map) addToValueLocked(idx *valueIndex, value, key string, h uint64) {
	members, _ := idx.Ref(s.epoch, value)
	members.SetHashed(s.epoch, h, key, struct{}{})
}

func (s *Map) removeFromValueLocked(idx *valueIndex, value, key string, h uint64) {
	members := idx.Existing(s.epoch, value)
	if members == nil {
		return
	}
	if _, ok := members.DeleteHashed(s.epoch, h, key); ok && members.Len() == 0 {
		idx.Delete(s.epoch, value)
	}
}

func (s *Map) removeEverywhereLocked(idx *valueIndex, key string, h uint64) {
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

// WriteOne runs the single write of obj under key, by name when byName
// (see Batch.ByName), and returns its error.
func (s *Map) WriteOne(key string, typ clientcache.TransactionType, obj any, byName bool) error {
	var one [1]write
	var buf [4][]string
	one[0] = write{key: key, typ: typ, obj: obj}
	b := batchOfOne(&one, &buf)
	b.ByName = byName
	s.Apply(&b)
	return one[0].err
}

// Add stores obj under key; it is Update.
func (s *Map) Add(key string, obj interface{}) {
	s.Update(key, obj)
}

// Update stores obj under key. An index function that fails on obj leaves
// it out of that index only (client-go panics); see reportIndexFailures.
// An object the store's form refuses is not stored, reported and counted.
func (s *Map) Update(key string, obj interface{}) {
	if err := s.WriteOne(key, clientcache.TransactionTypeUpdate, obj, false); err != nil {
		utilruntime.HandleErrorWithContext(context.TODO(), err, "Object not stored")
	}
}

// Delete removes key; it does not change the store's resource version.
func (s *Map) Delete(key string) {
	s.DeleteWithObject(key, nil)
}

// DeleteWithObject removes key and, if obj is a meta object, records its
// resource version even when key was absent.
func (s *Map) DeleteWithObject(key string, obj interface{}) {
	_ = s.WriteOne(key, clientcache.TransactionTypeDelete, obj, false)
}

// Transaction applies txns under one lock, only the last write of each
// key. An index function that fails on a written object leaves it out of
// that index only (client-go panics); a write of unknown type, or one the
// store's form refuses, is skipped and logged.
func (s *Map) Transaction(txns ...clientcache.ThreadSafeStoreTransaction) {
	b := GetBatch(len(txns))
	defer b.Release()
	for _, t := range txns {
		b.ws = append(b.ws, write{key: t.Key, typ: t.Type, obj: t.Object})
	}
	s.Apply(b)
	for i := range b.ws {
		if err := b.ws[i].err; err != nil {
			utilruntime.HandleErrorWithContext(context.TODO(), err, "Transaction write skipped", "key", b.ws[i].key)
		}
	}
}

// TransactionError is the outcome of b as client-go reports it: nil when
// every write was applied (or superseded), and otherwise which failed.
func (b *Batch) TransactionError() *clientcache.TransactionError {
	failed := 0
	for i := range b.ws {
		if b.ws[i].err != nil {
			failed++
		}
	}
	if failed == 0 {
		return nil
	}
	// Both slices are non-nil even when empty, as in client-go.
	total := len(b.ws)
	txErr := &clientcache.TransactionError{TotalTransactions: total, SuccessfulIndices: make([]int, 0, total-failed), Errors: make([]error, 0, failed)}
	for i := range b.ws {
		if err := b.ws[i].err; err != nil {
			txErr.Errors = append(txErr.Errors, err)
		} else {
			txErr.SuccessfulIndices = append(txErr.SuccessfulIndices, i)
		}
	}
	return txErr
}
