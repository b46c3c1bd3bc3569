package store

import (
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/features"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/hashmap"
	"github.com/openinformer/cache/internal/objmeta"
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

// Map is the ThreadSafeStore behind every Store and Indexer here.
// mu guards items, indexes, epoch, frozen and rv. indexers is published
// atomically so that writes compute index values before taking mu; it is
// only replaced under mu, and a writer that finds it changed once it holds
// mu computes again. A read may walk items and indexes after releasing mu
// only if it froze them first (shareIfLargeLocked). mu is the innermost
// lock of the package: nothing outside the store is called with it held
// but the form.Form's view and drop, which take no lock of the store.
type Map struct {
	mu sync.Mutex
	// epoch owns the map parts the writer may change in place.
	epoch hashmap.Epoch
	// frozen is set by readers that walk the maps outside the lock; the
	// next write then moves to a new epoch.
	frozen   bool
	items    hashmap.Map[any]
	indexes  []valueIndex // by position in indexers
	indexers atomic.Pointer[IndexerSet]
	rv       string
	rvMetric clientcache.GaugeMetric
	// objectErrors counts the index entries left out because an index
	// function failed, and the objects the form refused.
	objectErrors clientcache.CounterMetric
	// form converts between callers' objects and what items holds
	// (form.Plain: as they are). Set at construction, never changed.
	form form.Form
	// sharedHeld is the heldIndex that the Preheld objects indexed by
	// their key's namespace alone share (prehold.go).
	sharedHeld atomic.Pointer[heldIndex]
}

var _ clientcache.ThreadSafeStoreWithTransaction = &Map{}

// Config is what a Map is built with; it never changes afterwards.
type Config struct {
	// Form converts between callers' objects and what the map holds; nil
	// is form.Plain.
	Form form.Form
	// RVMetric, when set, is told each resource version recorded.
	RVMetric clientcache.GaugeMetric
	// ObjectErrors, when set, counts the index entries left out because
	// an index function failed, and the objects the form refused.
	ObjectErrors clientcache.CounterMetric
	// IsNamespaceIndex recognises the index functions that index by
	// namespace (MetaNamespaceIndexFunc), which writes evaluate without a
	// slice.
	IsNamespaceIndex func(clientcache.IndexFunc) bool
}

// New returns a Map indexed by indexers.
func New(indexers clientcache.Indexers, cfg Config) *Map {
	if cfg.Form == nil {
		cfg.Form = form.Plain{}
	}
	if cfg.ObjectErrors == nil {
		cfg.ObjectErrors = noopCounter{}
	}
	s := &Map{epoch: hashmap.NewEpoch(), rvMetric: cfg.RVMetric, objectErrors: cfg.ObjectErrors, form: cfg.Form}
	set := newIndexerSet(indexers, cfg.IsNamespaceIndex)
	s.indexers.Store(set)
	s.indexes = make([]valueIndex, len(set.names))
	return s
}

// noopCounter counts nothing.
type noopCounter struct{}

func (noopCounter) Inc() {}

// Form is the map's storage form.
func (s *Map) Form() form.Form { return s.form }

// IndexerSet is the current generation of index functions.
func (s *Map) IndexerSet() *IndexerSet { return s.indexers.Load() }

// CountObjectError counts one object the store could not keep as given.
func (s *Map) CountObjectError() { s.objectErrors.Inc() }

// lockForWrite takes the write lock and, if a reader froze the current
// tables, starts a new epoch so that they are copied rather than changed.
func (s *Map) lockForWrite() {
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
func (s *Map) shareIfLargeLocked(n, limit int) (locked bool) {
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

// rvOf returns the resource version of a meta object; others (nil: a
// delete by key) have none.
func rvOf(obj interface{}) storeRV {
	if obj == nil {
		return storeRV{}
	}
	m, err := objmeta.Accessor(obj)
	if err != nil {
		return storeRV{}
	}
	return storeRV{rv: m.GetResourceVersion(), set: true}
}

// recordRVLocked stores rv and publishes it the way client-go does: the
// last 15 digits as an integer, skipped if they do not parse.
func (s *Map) recordRVLocked(rv storeRV) {
	if !rv.set {
		return
	}
	s.rv = rv.rv
	if s.rvMetric == nil {
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

// Get returns the object stored under key.
func (s *Map) Get(key string) (item interface{}, exists bool) {
	s.mu.Lock()
	held, exists := s.items.Get(key)
	s.mu.Unlock()
	if !exists {
		return nil, false
	}
	return s.View(key, held)
}

// ReadStoredPrior is ReadPrior that also returns the key as the map
// stores it.
func (s *Map) ReadStoredPrior(key string) (stored string, old Prior) {
	s.mu.Lock()
	stored, held, exists := s.items.GetKey(key)
	s.mu.Unlock()
	return stored, s.viewPrior(stored, held, exists)
}

// List returns every stored object, from one consistent state.
func (s *Map) List() []interface{} {
	s.mu.Lock()
	items := s.items
	if s.shareIfLargeLocked(items.Len(), s.viewUnderLock(scanUnderLock)) {
		defer s.mu.Unlock()
	}
	return s.appendObjects(make([]interface{}, 0, items.Len()), items)
}

// Len is how many objects the map holds.
func (s *Map) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.items.Len()
}

// ListKeys returns every key, from one consistent state.
func (s *Map) ListKeys() []string {
	s.mu.Lock()
	m := s.items
	if s.shareIfLargeLocked(m.Len(), scanUnderLock) {
		defer s.mu.Unlock()
	}
	return m.AppendKeys(make([]string, 0, m.Len()))
}

// membersValues returns the objects of the keys pick chooses, read under
// the lock for few keys and from the frozen maps for many.
func (s *Map) membersValues(pick func() (keySet, error)) ([]interface{}, error) {
	s.mu.Lock()
	members, err := pick()
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	items := s.items
	if s.shareIfLargeLocked(members.Len(), s.viewUnderLock(copyUnderLock)) {
		defer s.mu.Unlock()
	}
	return s.appendObjectsOf(make([]interface{}, 0, members.Len()), items, members), nil
}

// Index returns the stored objects that share any of obj's values in the
// named index, each once.
func (s *Map) Index(indexName string, obj interface{}) ([]interface{}, error) {
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
func (s *Map) union(i int, vals []string) []interface{} {
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
	if s.shareIfLargeLocked(total, s.viewUnderLock(copyUnderLock)) {
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
	return s.appendObjectsOf(make([]interface{}, 0, merged.Len()), items, merged)
}

// membersLocked returns the keySet of value in the named index; the caller
// holds mu.
func (s *Map) membersLocked(indexName, value string) (keySet, error) {
	i, ok := s.indexers.Load().pos[indexName]
	if !ok {
		return keySet{}, indexMissingError(indexName)
	}
	members, _ := s.indexes[i].Get(value)
	return members, nil
}

// ByIndex returns the stored objects whose values in the named index
// include indexedValue.
func (s *Map) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	return s.membersValues(func() (keySet, error) { return s.membersLocked(indexName, indexedValue) })
}

// IndexKeys returns, sorted, the keys whose values in the named index
// include indexedValue.
func (s *Map) IndexKeys(indexName, indexedValue string) ([]string, error) {
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
func (s *Map) ListIndexFuncValues(indexName string) []string {
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
func (s *Map) GetIndexers() clientcache.Indexers {
	return s.indexers.Load().funcs
}

// Resync does nothing.
func (s *Map) Resync() error {
	return nil
}

// Bookmark records rv as the store's resource version.
func (s *Map) Bookmark(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordRVLocked(storeRV{rv: rv, set: true})
}

// LastStoreSyncResourceVersion returns the last recorded resource version,
// or "" while the AtomicFIFO feature gate is off.
func (s *Map) LastStoreSyncResourceVersion() string {
	if !features.FeatureGates().Enabled(features.AtomicFIFO) {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

// Frozen is one consistent state of a store, frozen for a restart
// snapshot to be written from:
// items and indexes as of rv, under the indexers of set. Its maps are
// never changed again, so it is walked without the lock.
type Frozen struct {
	items   hashmap.Map[any]
	indexes []valueIndex
	set     *IndexerSet
	rv      string
}

// Freeze returns the current state in O(1) under the lock, as large reads
// do (shareIfLargeLocked): the maps are values, copying them freezes
// them, and the next write moves to a new epoch, copying only the
// tables it touches. Writers wait only for the copy of a few words.
func (s *Map) Freeze() Frozen {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = true
	return Frozen{items: s.items, indexes: slices.Clone(s.indexes), set: s.indexers.Load(), rv: s.rv}
}

// RV is the resource version of f.
func (f Frozen) RV() string { return f.rv }

// Len is the number of objects of f.
func (f Frozen) Len() int { return f.items.Len() }

// Set is the generation of index functions f's indexes were built with.
func (f Frozen) Set() *IndexerSet { return f.set }

// RangeHeld calls fn with the key and held value of each object of f,
// reading none back, until fn returns false.
func (f Frozen) RangeHeld(fn func(key string, held any) bool) { f.items.Range(fn) }
