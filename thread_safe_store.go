package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/features"

	"github.com/openinformer/cache/internal/hashmap"
)

// The store keeps its items and every index in persistent hash maps
// (internal/hashmap). A reader that needs more than a handful of entries
// takes the current maps under the lock and walks them after releasing it,
// so a List of a large store never holds the lock for the length of its copy
// and always sees one consistent state. The writer changes the maps' tables in
// place until a reader freezes them; its next write then starts a new epoch
// and copies the directory and the one table it touches.
//
// Every critical section is short, so one plain Mutex serves readers and
// writers. An RWMutex measured 40 times slower for a writer facing ten
// listing readers: a pending writer counts readers it has just woken as
// active and waits for the scheduler to run each of them.

// A read copies its answer while still holding the lock up to a size,
// because freezing costs the next write a copy of the directory and the
// table it touches (up to about 10 KB). Copying a run of values is cheap
// (about 1 µs per 1000), so whole-map reads do that up to scanUnderLock;
// reads that look each member up (ByIndex) cost some 50 ns per entry, so
// they stop at copyUnderLock.
const (
	scanUnderLock = 1024
	copyUnderLock = 64
)

// ThreadSafeStoreOption configures a store built by NewThreadSafeStore.
type ThreadSafeStoreOption = func(*threadSafeMap)

// WithThreadSafeStoreMetrics publishes the store's resource version under
// identifier, through provider or, when it is nil, the process-wide one.
func WithThreadSafeStoreMetrics(identifier InformerNameAndResource, provider InformerMetricsProvider) ThreadSafeStoreOption {
	return func(s *threadSafeMap) {
		s.rvMetric = newStoreRVMetric(identifier, provider)
		s.objectErrors = newObjectErrorMetric(identifier, provider)
	}
}

// threadSafeMap is the ThreadSafeStore behind every Store and Indexer here.
// mu guards items, indexes, epoch, frozen and rv. indexers is published
// atomically so that writes compute index values before taking mu; it is
// only replaced under mu, and a writer that finds it changed once it holds
// mu computes again. A read may walk items and indexes after releasing mu
// only if it froze them first (shareIfLargeLocked).
type threadSafeMap struct {
	mu sync.Mutex
	// epoch owns the map parts the writer may change in place.
	epoch hashmap.Epoch
	// frozen is set by readers that walk the maps outside the lock; the
	// next write then moves to a new epoch.
	frozen   bool
	items    hashmap.Map[any]
	indexes  []valueIndex // by position in indexers
	indexers atomic.Pointer[indexerSet]
	rv       string
	rvMetric GaugeMetric
	// objectErrors counts the index entries left out because an index
	// function failed.
	objectErrors CounterMetric
}

var (
	_ ThreadSafeStoreWithTransaction = &threadSafeMap{}
)

// NewThreadSafeStore returns a ThreadSafeStore indexed by indexers. The
// indices argument exists for compatibility: indexes are always derived
// from the stored items, so any prebuilt content is ignored.
func NewThreadSafeStore(indexers Indexers, indices Indices, opts ...ThreadSafeStoreOption) ThreadSafeStore {
	return newThreadSafeMap(indexers, opts...)
}

func newThreadSafeMap(indexers Indexers, opts ...ThreadSafeStoreOption) *threadSafeMap {
	s := &threadSafeMap{epoch: hashmap.NewEpoch(), rvMetric: noopMetric{}, objectErrors: noopMetric{}}
	set := newIndexerSet(indexers)
	s.indexers.Store(set)
	s.indexes = make([]valueIndex, len(set.names))
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// lockForWrite takes the write lock and, if a reader froze the current
// tables, starts a new epoch so that they are copied rather than changed.
func (s *threadSafeMap) lockForWrite() {
	s.mu.Lock()
	if s.frozen {
		s.epoch = hashmap.NewEpoch()
		s.frozen = false
	}
}

// shareIfLargeLocked ends a read's critical section early when the read
// has more than limit entries to copy: it marks the current tables as
// shared with the reader, which then copies them outside the lock, and
// unlocks. It returns whether mu is still held, for the caller to release
// after copying. Call it with mu held.
func (s *threadSafeMap) shareIfLargeLocked(n, limit int) (locked bool) {
	if n <= limit {
		return true
	}
	s.frozen = true
	s.mu.Unlock()
	return false
}

// storeRV is a resource version to record with a write.
type storeRV struct {
	rv  string
	set bool
}

// rvOf returns the resource version of a meta object; others have none.
func rvOf(obj interface{}) storeRV {
	m, err := accessor(obj)
	if err != nil {
		return storeRV{}
	}
	return storeRV{rv: m.GetResourceVersion(), set: true}
}

// recordRVLocked stores rv and publishes it the way client-go does: the
// last 15 digits as an integer, skipped if they do not parse.
func (s *threadSafeMap) recordRVLocked(rv storeRV) {
	if !rv.set {
		return
	}
	s.rv = rv.rv
	if _, off := s.rvMetric.(noopMetric); off {
		return
	}
	digits := rv.rv
	if digits == "" {
		s.rvMetric.Set(0)
		return
	}
	if len(digits) > 15 {
		digits = digits[len(digits)-15:]
	}
	if n, err := strconv.ParseInt(digits, 10, 64); err == nil {
		s.rvMetric.Set(float64(n))
	}
}

// Add stores obj under key; it is Update.
func (s *threadSafeMap) Add(key string, obj interface{}) {
	s.Update(key, obj)
}

// Update stores obj under key. An index function that fails on obj leaves
// it out of that index only (client-go panics); see reportIndexFailures.
func (s *threadSafeMap) Update(key string, obj interface{}) {
	s.put(key, obj)
}

// put stores obj under key, in every index whose function succeeds on it.
func (s *threadSafeMap) put(key string, obj interface{}) {
	var buf [4][]string
	set := s.indexers.Load()
	vals, fails := set.values(buf[:0], key, obj)
	rv := rvOf(obj)
	s.lockForWrite()
	if cur := s.indexers.Load(); cur != set {
		set = cur
		vals, fails = set.values(buf[:0], key, obj)
	}
	s.putLocked(set, key, obj, vals)
	s.recordRVLocked(rv)
	s.mu.Unlock()
	s.reportIndexFailures(fails)
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

func (s *threadSafeMap) putLocked(set *indexerSet, key string, obj interface{}, vals [][]string) {
	old, existed := s.items.Set(s.epoch, key, obj)
	for i := range s.indexes {
		s.reindexLocked(set, i, key, old, existed, obj, vals[i])
	}
}

// reindexLocked moves key within index i from the values of old (if it
// existed) to vals. Should the index function now fail on the stored
// object, the key is found by a scan instead, so a write never fails
// half-way.
func (s *threadSafeMap) reindexLocked(set *indexerSet, i int, key string, old interface{}, existed bool, obj interface{}, vals []string) {
	idx := &s.indexes[i]
	if set.byNamespace[i] {
		s.reindexNamespaceLocked(idx, key, old, existed, obj)
		return
	}
	if existed && old != nil {
		oldVals, err := set.fns[i](old)
		switch {
		case err != nil:
			s.removeEverywhereLocked(idx, key)
		case slices.Equal(oldVals, vals):
			return
		default:
			for _, v := range oldVals {
				s.removeFromValueLocked(idx, v, key)
			}
		}
	}
	for _, v := range vals {
		s.addToValueLocked(idx, v, key)
	}
}

// reindexNamespaceLocked is reindexLocked for MetaNamespaceIndexFunc. An
// obj that is nil or has no namespace is in no namespace.
func (s *threadSafeMap) reindexNamespaceLocked(idx *valueIndex, key string, old interface{}, existed bool, obj interface{}) {
	var ns string
	indexed := false
	if obj != nil {
		if m, err := accessor(obj); err == nil {
			ns, indexed = m.GetNamespace(), true
		}
	}
	if existed && old != nil {
		oldMeta, err := accessor(old)
		switch {
		case err != nil:
			s.removeEverywhereLocked(idx, key)
		case indexed && ns == oldMeta.GetNamespace():
			return
		default:
			s.removeFromValueLocked(idx, oldMeta.GetNamespace(), key)
		}
	}
	if indexed {
		s.addToValueLocked(idx, ns, key)
	}
}

func (s *threadSafeMap) addToValueLocked(idx *valueIndex, value, key string) {
	members, _ := idx.Ref(s.epoch, value)
	members.Set(s.epoch, key, struct{}{})
}

func (s *threadSafeMap) removeFromValueLocked(idx *valueIndex, value, key string) {
	members := idx.Existing(s.epoch, value)
	if members == nil {
		return
	}
	if _, ok := members.Delete(s.epoch, key); ok && members.Len() == 0 {
		idx.Delete(s.epoch, value)
	}
}

func (s *threadSafeMap) removeEverywhereLocked(idx *valueIndex, key string) {
	var holding []string
	idx.Range(func(value string, members keySet) bool {
		if _, ok := members.Get(key); ok {
			holding = append(holding, value)
		}
		return true
	})
	for _, v := range holding {
		s.removeFromValueLocked(idx, v, key)
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
	s.lockForWrite()
	defer s.mu.Unlock()
	s.deleteLocked(s.indexers.Load(), key)
	s.recordRVLocked(rv)
}

func (s *threadSafeMap) deleteLocked(set *indexerSet, key string) {
	old, ok := s.items.Delete(s.epoch, key)
	if !ok {
		return
	}
	for i := range s.indexes {
		s.reindexLocked(set, i, key, old, true, nil, nil)
	}
}

// Get returns the object stored under key.
func (s *threadSafeMap) Get(key string) (item interface{}, exists bool) {
	s.mu.Lock()
	item, exists = s.items.Get(key)
	s.mu.Unlock()
	return item, exists
}

// getStored is Get that also returns the key as the map stores it.
func (s *threadSafeMap) getStored(key string) (stored string, item interface{}, exists bool) {
	s.mu.Lock()
	stored, item, exists = s.items.GetKey(key)
	s.mu.Unlock()
	return stored, item, exists
}

// List returns every stored object, from one consistent state.
func (s *threadSafeMap) List() []interface{} {
	s.mu.Lock()
	items := s.items
	if s.shareIfLargeLocked(items.Len(), scanUnderLock) {
		defer s.mu.Unlock()
	}
	return items.AppendValues(make([]interface{}, 0, items.Len()))
}

// ListKeys returns every key, from one consistent state.
func (s *threadSafeMap) ListKeys() []string {
	s.mu.Lock()
	m := s.items
	if s.shareIfLargeLocked(m.Len(), scanUnderLock) {
		defer s.mu.Unlock()
	}
	return m.AppendKeys(make([]string, 0, m.Len()))
}

// membersValues returns the objects of the keys pick chooses, read under
// the lock for few keys and from a frozen snapshot for many.
func (s *threadSafeMap) membersValues(pick func() (keySet, error)) ([]interface{}, error) {
	s.mu.Lock()
	members, err := pick()
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	items := s.items
	if s.shareIfLargeLocked(members.Len(), copyUnderLock) {
		defer s.mu.Unlock()
	}
	return hashmap.AppendValuesOf(make([]interface{}, 0, members.Len()), items, members), nil
}

// Replace swaps the whole content for items and sets the resource version.
// An index function that fails on an item leaves it out of that index only
// (client-go panics).
func (s *threadSafeMap) Replace(items map[string]interface{}, resourceVersion string) {
	e := hashmap.NewEpoch()
	m := hashmap.Sized[any](e, len(items))
	for key, obj := range items {
		m.Set(e, key, obj)
	}
	s.replace(m, e, resourceVersion, listOrder{})
}

// replace makes items, built in epoch e and seen by no one else, the new
// content, and returns the content it replaced. The indexes are built
// before the lock is taken (if the indexers change meanwhile they are built
// again), so readers and writers are held up only for the swap. Both the
// old and the new content are frozen: the caller may read them freely.
func (s *threadSafeMap) replace(items hashmap.Map[any], e hashmap.Epoch, rv string, order listOrder) hashmap.Map[any] {
	for {
		set := s.indexers.Load()
		b := newIndexBuilder(set, 0, items.Len(), true)
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
		return before
	}
}

// Index returns the stored objects that share any of obj's values in the
// named index, each once.
func (s *threadSafeMap) Index(indexName string, obj interface{}) ([]interface{}, error) {
	set := s.indexers.Load()
	fn, ok := set.funcs[indexName]
	if !ok {
		return nil, indexMissingError(indexName)
	}
	vals, err := fn(obj)
	if err != nil {
		return nil, err
	}
	i := set.pos[indexName]
	if len(vals) == 1 {
		return s.membersValues(func() (keySet, error) {
			members, _ := s.indexes[i].Get(vals[0])
			return members, nil
		})
	}
	return s.union(i, vals), nil
}

// union returns the objects under any of vals in index i, deduplicated.
func (s *threadSafeMap) union(i int, vals []string) []interface{} {
	groups := make([]keySet, 0, len(vals))
	total := 0
	s.mu.Lock()
	for _, v := range vals {
		if members, ok := s.indexes[i].Get(v); ok {
			groups = append(groups, members)
			total += members.Len()
		}
	}
	items := s.items
	if s.shareIfLargeLocked(total, copyUnderLock) {
		defer s.mu.Unlock()
	}
	var merged keySet
	e := hashmap.NewEpoch()
	for _, members := range groups {
		members.Range(func(key string, _ struct{}) bool {
			merged.Set(e, key, struct{}{})
			return true
		})
	}
	return hashmap.AppendValuesOf(make([]interface{}, 0, merged.Len()), items, merged)
}

// membersLocked returns the keySet of value in the named index; the caller
// holds mu.
func (s *threadSafeMap) membersLocked(indexName, value string) (keySet, error) {
	i, ok := s.indexers.Load().pos[indexName]
	if !ok {
		return keySet{}, indexMissingError(indexName)
	}
	members, _ := s.indexes[i].Get(value)
	return members, nil
}

// ByIndex returns the stored objects whose values in the named index
// include indexedValue.
func (s *threadSafeMap) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	return s.membersValues(func() (keySet, error) { return s.membersLocked(indexName, indexedValue) })
}

// IndexKeys returns, sorted, the keys whose values in the named index
// include indexedValue.
func (s *threadSafeMap) IndexKeys(indexName, indexedValue string) ([]string, error) {
	s.mu.Lock()
	members, err := s.membersLocked(indexName, indexedValue)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	locked := s.shareIfLargeLocked(members.Len(), scanUnderLock)
	keys := members.AppendKeys(make([]string, 0, members.Len()))
	if locked {
		s.mu.Unlock()
	}
	sort.Strings(keys)
	return keys, nil
}

// ListIndexFuncValues returns the values of the named index that have at
// least one member; none for an unknown index.
func (s *threadSafeMap) ListIndexFuncValues(indexName string) []string {
	s.mu.Lock()
	i, ok := s.indexers.Load().pos[indexName]
	if !ok {
		s.mu.Unlock()
		return []string{}
	}
	idx := s.indexes[i]
	if s.shareIfLargeLocked(idx.Len(), scanUnderLock) {
		defer s.mu.Unlock()
	}
	return idx.AppendKeys(make([]string, 0, idx.Len()))
}

// GetIndexers returns the index functions. The map is never changed by the
// store: AddIndexers publishes a new one.
func (s *threadSafeMap) GetIndexers() Indexers {
	return s.indexers.Load().funcs
}

// AddIndexers adds index functions and indexes the stored items with them.
// A name already in use is a conflict and nothing is added; so is an index
// function that fails on a stored item.
func (s *threadSafeMap) AddIndexers(newIndexers Indexers) error {
	if len(newIndexers) == 0 {
		return nil
	}
	s.lockForWrite()
	defer s.mu.Unlock()
	cur := s.indexers.Load()
	if common := sets.KeySet(cur.funcs).Intersection(sets.KeySet(newIndexers)); common.Len() > 0 {
		return fmt.Errorf("indexer conflict: %v", common)
	}
	next := cur.with(newIndexers)
	added, err := newIndexBuilder(next, len(cur.fns), s.items.Len(), false).buildFrom(s.items, s.epoch, listOrder{})
	if err != nil {
		return err
	}
	s.indexes = append(append([]valueIndex(nil), s.indexes...), added...)
	s.indexers.Store(next)
	return nil
}

// Resync does nothing.
func (s *threadSafeMap) Resync() error {
	return nil
}

// Bookmark records rv as the store's resource version.
func (s *threadSafeMap) Bookmark(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordRVLocked(storeRV{rv: rv, set: true})
}

// LastStoreSyncResourceVersion returns the last recorded resource version,
// or "" while the AtomicFIFO feature gate is off.
func (s *threadSafeMap) LastStoreSyncResourceVersion() string {
	if !features.FeatureGates().Enabled(features.AtomicFIFO) {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

// Transaction applies txns in order under one lock. An index function that
// fails on a written object leaves it out of that index only (client-go
// panics); a write of unknown type is skipped and logged.
func (s *threadSafeMap) Transaction(txns ...ThreadSafeStoreTransaction) {
	for _, f := range s.transaction(txns) {
		utilruntime.HandleErrorWithContext(context.TODO(), f.err, "Transaction write skipped", "key", txns[f.pos].Key)
	}
}

// txnFailure is a transaction write that was not applied.
type txnFailure struct {
	pos int
	err error
}

// transaction applies txns under one lock and returns the writes it
// skipped. The store's resource version becomes that of the last applied
// write's object, if it has one.
func (s *threadSafeMap) transaction(txns []ThreadSafeStoreTransaction) []txnFailure {
	if len(txns) == 0 {
		return nil
	}
	set := s.indexers.Load()
	vals, failures, indexFails := txnValues(set, txns)
	s.lockForWrite()
	if cur := s.indexers.Load(); cur != set {
		set = cur
		vals, failures, indexFails = txnValues(set, txns)
	}
	s.commitLocked(set, txns, vals, failures)
	s.mu.Unlock()
	s.reportIndexFailures(indexFails)
	return failures
}

// commitLocked applies every write of txns but the failed ones.
func (s *threadSafeMap) commitLocked(set *indexerSet, txns []ThreadSafeStoreTransaction, vals [][]string, failed []txnFailure) {
	var rv storeRV
	n := len(set.fns)
	for i, t := range txns {
		if len(failed) > 0 && failed[0].pos == i {
			failed = failed[1:]
			continue
		}
		if t.Type == TransactionTypeDelete {
			s.deleteLocked(set, t.Key)
		} else {
			s.putLocked(set, t.Key, t.Object, vals[i*n:(i+1)*n])
		}
		rv = rvOf(t.Object)
	}
	s.recordRVLocked(rv)
}

// txnValues computes the index values of every Add and Update, write i's
// at vals[i*n:(i+1)*n] for n index functions, in one allocation for the
// batch. Writes that cannot be applied are listed, in order, in failures;
// the index entries left out of applied writes in indexFails.
func txnValues(set *indexerSet, txns []ThreadSafeStoreTransaction) (vals [][]string, failures []txnFailure, indexFails []error) {
	n := len(set.fns)
	vals = make([][]string, len(txns)*n)
	for i, t := range txns {
		switch t.Type {
		case TransactionTypeAdd, TransactionTypeUpdate:
			_, fails := set.values(vals[i*n:i*n:(i+1)*n], t.Key, t.Object)
			indexFails = append(indexFails, fails...)
		case TransactionTypeDelete:
		default:
			failures = append(failures, txnFailure{i, fmt.Errorf("unknown transaction type %q", t.Type)})
		}
	}
	return vals, failures, indexFails
}
