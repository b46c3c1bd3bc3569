package cache

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/openinformer/cache/internal/fanout"
	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/keyparts"
	"github.com/openinformer/cache/internal/objmeta"
	"github.com/openinformer/cache/internal/store"
)

// StoreOption configures a Store or Indexer built by NewStore or NewIndexer.
type StoreOption = func(*cache)

// WithTransformer makes the store pass every object it stores through
// transformer first (Delete is not transformed).
func WithTransformer(transformer TransformFunc) StoreOption {
	return func(c *cache) {
		c.transformer = transformer
	}
}

// WithStoreMetrics publishes the store's resource version under identifier,
// through provider or, when it is nil, the process-wide one.
func WithStoreMetrics(identifier InformerNameAndResource, provider InformerMetricsProvider) StoreOption {
	return func(c *cache) {
		c.identifier = identifier
		c.provider = provider
		c.withMetrics = true
	}
}

// cache is the Store and Indexer: a KeyFunc and an optional transformer in
// front of the store engine's map (internal/store). It has no lock of its
// own: its fields are set at construction, and storage locks itself.
type cache struct {
	storage *store.Map
	keyFunc KeyFunc
	// metaKeys marks a keyFunc that keys by namespace and name, which lookup
	// can assemble without allocating.
	metaKeys    bool
	transformer TransformFunc
	identifier  InformerNameAndResource
	provider    InformerMetricsProvider
	withMetrics bool
	form        form.Form
	// compact is form when it is compact storage, for its statistics; nil
	// otherwise.
	compact *form.Compact
}

var (
	_ Indexer          = &cache{}
	_ TransactionStore = &cache{}
	_ store.Selecting  = &cache{}
)

// NewStore returns a Store that keys objects with keyFunc.
func NewStore(keyFunc KeyFunc, opts ...StoreOption) Store {
	return newCache(keyFunc, Indexers{}, opts)
}

// NewIndexer returns an Indexer that keys objects with keyFunc and indexes
// them with indexers. A nil indexers is an Indexer with no indexes yet.
func NewIndexer(keyFunc KeyFunc, indexers Indexers, opts ...StoreOption) Indexer {
	return newCache(keyFunc, indexers, opts)
}

func newCache(keyFunc KeyFunc, indexers Indexers, opts []StoreOption) *cache {
	c := &cache{keyFunc: keyFunc, metaKeys: isMetaNamespaceKeyFunc(keyFunc), form: form.Plain{}}
	for _, opt := range opts {
		opt(c)
	}
	cfg := storeConfig(c.form)
	if c.withMetrics {
		cfg.RVMetric, cfg.ObjectErrors = storeMetrics(c.identifier, c.provider)
	}
	c.storage = store.New(indexers, cfg)
	return c
}

// withStoredForm makes a store built by NewStore or NewIndexer hold its
// objects in form f.
func withStoredForm(f form.Form) StoreOption {
	return func(c *cache) { c.form = f }
}

var errNilStoreObject = errors.New("object is nil")

// keyOf computes obj's key; nil objects and typed nil pointers are refused
// before the KeyFunc sees them.
func (c *cache) keyOf(obj interface{}) (string, error) {
	if obj == nil {
		return "", KeyError{Obj: obj, Err: errNilStoreObject}
	}
	if isNilPointer(obj) {
		return "", KeyError{Obj: obj, Err: errNilObject}
	}
	key, err := c.keyFunc(obj)
	if err != nil {
		return "", KeyError{Obj: obj, Err: err}
	}
	return key, nil
}

// lookup returns obj's key and what is stored under it, read as a write's
// prior, so that the write need not read it again. With a
// namespace-and-name key function the key is first assembled on the stack:
// when obj is already stored (an update, the common case) the stored key
// string is returned and no key is allocated.
func (c *cache) lookup(obj interface{}) (key string, old store.Prior, err error) {
	if c.metaKeys {
		if m, err := objmeta.Accessor(obj); err == nil {
			key, old = c.lookupMeta(m.GetNamespace(), m.GetName())
			return key, old, nil
		}
	}
	if key, err = c.keyOf(obj); err != nil {
		return "", store.Prior{}, err
	}
	return key, c.storage.ReadPrior(key), nil
}

// lookupMeta is lookup for the key namespace/name.
func (c *cache) lookupMeta(ns, name string) (string, store.Prior) {
	p := keyparts.Parts{Namespace: ns, Name: name}
	var buf [keyparts.JoinBufSize]byte
	if joined, ok := p.JoinInto(&buf); ok {
		// joined aliases buf only for the lookup; the map compares it and
		// keeps nothing, and what is returned is the map's own key.
		if key, old := c.storage.ReadStoredPrior(joined); old.Existed() {
			return key, old
		}
		return p.Key(), store.AbsentPrior()
	}
	key := p.Key()
	return key, c.storage.ReadPrior(key)
}

// transform applies the store's transformer, if any.
func (c *cache) transform(obj interface{}) (interface{}, error) {
	if c.transformer == nil {
		return obj, nil
	}
	obj, err := c.transformer(obj)
	if err != nil {
		return nil, fmt.Errorf("transforming: %w", err)
	}
	return obj, nil
}

// Add stores obj under its key, replacing any object already there.
func (c *cache) Add(obj interface{}) error {
	return c.Update(obj)
}

// Update stores obj under its key, inserting it if absent. An error means
// obj was not stored: its key or transform failed. An index function that
// fails on obj leaves it out of that index only, reported and counted.
func (c *cache) Update(obj interface{}) error {
	key, err := c.keyOf(obj)
	if err != nil {
		return err
	}
	if obj, err = c.transform(obj); err != nil {
		return err
	}
	return c.storage.WriteOne(key, TransactionTypeUpdate, obj, c.metaKeys)
}

// Delete removes the object with obj's key; an absent key is not an error.
func (c *cache) Delete(obj interface{}) error {
	key, err := c.keyOf(obj)
	if err != nil {
		return err
	}
	return c.storage.WriteOne(key, TransactionTypeDelete, obj, c.metaKeys)
}

// List returns every stored object, from one consistent state.
func (c *cache) List() []interface{} {
	return c.storage.List()
}

// initialList is what a handler added to a running informer is handed
// first: the stored objects, or, where reading them back decodes them,
// boxes its listener reads back one at a time as it delivers them.
func (c *cache) initialList() []any {
	if c.form.InPlace() {
		return c.storage.List()
	}
	return fanout.Boxes(c.storage.Freeze(), c.form)
}

// ListKeys returns every key, from one consistent state.
func (c *cache) ListKeys() []string {
	return c.storage.ListKeys()
}

// ListSelect returns the objects whose labels sel matches, matched before
// they are read (store.Selecting, for listers).
func (c *cache) ListSelect(sel labels.Selector) ([]interface{}, error) {
	return c.storage.ListSelect(sel)
}

// IndexSelect is ListSelect among the objects sharing any of obj's values
// in the named index.
func (c *cache) IndexSelect(indexName string, obj interface{}, sel labels.Selector) ([]interface{}, error) {
	return c.storage.IndexSelect(indexName, obj, sel)
}

// LastStoreSyncResourceVersion returns the last resource version the store
// recorded (see store.Map).
func (c *cache) LastStoreSyncResourceVersion() string {
	return c.storage.LastStoreSyncResourceVersion()
}

// Bookmark records rv as the store's resource version.
func (c *cache) Bookmark(rv string) {
	c.storage.Bookmark(rv)
}

// Get returns the object stored under obj's key.
func (c *cache) Get(obj interface{}) (item interface{}, exists bool, err error) {
	key, err := c.keyOf(obj)
	if err != nil {
		return nil, false, err
	}
	return c.GetByKey(key)
}

// GetByKey returns the object stored under key; it never fails.
func (c *cache) GetByKey(key string) (item interface{}, exists bool, err error) {
	item, exists = c.storage.Get(key)
	return item, exists, nil
}

// Replace makes list the whole content and rv the resource version. An
// object whose key or transform fails is left out, and the others are
// stored all the same: the error names each object left out. Of two
// objects with one key, the later wins; keyed by namespace and name, that
// is reported and counted (see store_collisions.go).
func (c *cache) Replace(list []interface{}, rv string) error {
	_, dropped := c.replaceList(list, rv)
	return errors.Join(dropped...)
}

// replaceList is Replace that also returns what it stored, and one error
// per object of list it left out.
func (c *cache) replaceList(list []interface{}, rv string) (store.Replacement, []error) {
	return c.storage.ReplaceList(list, rv, c.storable, c.metaKeys)
}

// storable returns obj's key and obj transformed.
func (c *cache) storable(obj interface{}) (key string, stored interface{}, err error) {
	if key, err = c.keyOf(obj); err != nil {
		return "", nil, err
	}
	if stored, err = c.transform(obj); err != nil {
		return "", nil, err
	}
	return key, stored, nil
}

// preholdFunc returns obj, already transformed, held in its store's form
// ahead of the Replace that will store it, or the error that refuses it
// alone.
type preholdFunc func(obj any) (store.Preheld, error)

// preholder returns the store's preholdFunc, nil when its form holds
// objects in place: there is nothing to gain.
func (c *cache) preholder() preholdFunc {
	if c.storage.Form().InPlace() {
		return nil
	}
	return func(obj any) (store.Preheld, error) {
		key, err := c.keyOf(obj)
		if err != nil {
			return store.Preheld{}, err
		}
		return c.storage.Prehold(key, obj)
	}
}

// heldKey is the store key of a value a preholdFunc returned, false for
// any other value.
func heldKey(v any) (string, bool) {
	p, ok := v.(store.Preheld)
	if !ok {
		return "", false
	}
	return p.Key(), true
}

// Resync does nothing.
func (c *cache) Resync() error {
	return nil
}

// Transaction applies txns in order under one lock, only the last write
// of each key. Writes whose key cannot be computed or whose type is
// unknown are skipped and returned in the error; a write whose index
// function fails is applied, left out of that index and reported. The
// transformer is not applied.
func (c *cache) Transaction(txns ...Transaction) *TransactionError {
	b := store.GetBatch(len(txns))
	defer b.Release()
	b.ByName = c.metaKeys
	for _, t := range txns {
		key, err := c.keyOf(t.Object)
		b.Add(key, t.Type, t.Object, store.Prior{}, err)
	}
	c.storage.Apply(b)
	return b.TransactionError()
}

// GetIndexers returns the index functions; the map is never changed.
func (c *cache) GetIndexers() Indexers {
	return c.storage.GetIndexers()
}

// Index returns the stored objects sharing any of obj's values in the
// named index.
func (c *cache) Index(indexName string, obj interface{}) ([]interface{}, error) {
	return c.storage.Index(indexName, obj)
}

// IndexKeys returns, sorted, the keys whose values in the named index
// include indexedValue.
func (c *cache) IndexKeys(indexName, indexedValue string) ([]string, error) {
	return c.storage.IndexKeys(indexName, indexedValue)
}

// ListIndexFuncValues returns the values of the named index that have
// members.
func (c *cache) ListIndexFuncValues(indexName string) []string {
	return c.storage.ListIndexFuncValues(indexName)
}

// ByIndex returns the stored objects whose values in the named index
// include indexedValue.
func (c *cache) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	return c.storage.ByIndex(indexName, indexedValue)
}

// AddIndexers adds index functions and indexes the stored objects with
// them at once.
func (c *cache) AddIndexers(newIndexers Indexers) error {
	return c.storage.AddIndexers(newIndexers)
}
