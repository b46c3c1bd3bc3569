package cache

import (
	"errors"
	"fmt"

	"github.com/openinformer/cache/internal/hashmap"
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
// front of a threadSafeMap. It has no lock of its own: its fields are set
// at construction, and storage locks itself.
type cache struct {
	storage *threadSafeMap
	keyFunc KeyFunc
	// metaKeys marks a keyFunc that keys by namespace and name, which lookup
	// can assemble without allocating.
	metaKeys    bool
	transformer TransformFunc
	identifier  InformerNameAndResource
	provider    InformerMetricsProvider
	withMetrics bool
	form        storedForm
	// committed, when set (a warm restart's journal), is told each batch
	// of deltas applyWrites committed, with the values the store holds.
	committed func([]Delta, *writeBatch)
}

var (
	_ Indexer          = &cache{}
	_ TransactionStore = &cache{}
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
	c := &cache{keyFunc: keyFunc, metaKeys: isMetaNamespaceKeyFunc(keyFunc), form: plainForm{}}
	for _, opt := range opts {
		opt(c)
	}
	var tsOpts []ThreadSafeStoreOption
	if c.withMetrics {
		tsOpts = append(tsOpts, WithThreadSafeStoreMetrics(c.identifier, c.provider))
	}
	c.storage = newThreadSafeMap(indexers, tsOpts...)
	c.storage.form = c.form
	return c
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
func (c *cache) lookup(obj interface{}) (key string, old prior, err error) {
	if c.metaKeys {
		if m, err := accessor(obj); err == nil {
			key, old = c.lookupMeta(m.GetNamespace(), m.GetName())
			return key, old, nil
		}
	}
	if key, err = c.keyOf(obj); err != nil {
		return "", prior{}, err
	}
	return key, c.storage.readPrior(key), nil
}

// lookupMeta is lookup for the key namespace/name.
func (c *cache) lookupMeta(ns, name string) (string, prior) {
	p := keyParts{namespace: ns, name: name}
	var buf [joinBufSize]byte
	if joined, ok := p.joinInto(&buf); ok {
		// joined aliases buf only for the lookup; the map compares it and
		// keeps nothing, and what is returned is the map's own key.
		if key, old := c.storage.readStoredPrior(joined); old.existed {
			return key, old
		}
		return p.key(), prior{read: true}
	}
	key := p.key()
	return key, c.storage.readPrior(key)
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
	return c.storage.writeOne(write{key: key, typ: TransactionTypeUpdate, obj: obj}, c.metaKeys)
}

// Delete removes the object with obj's key; an absent key is not an error.
func (c *cache) Delete(obj interface{}) error {
	key, err := c.keyOf(obj)
	if err != nil {
		return err
	}
	return c.storage.writeOne(write{key: key, typ: TransactionTypeDelete, obj: obj}, c.metaKeys)
}

// List returns every stored object, from one consistent state.
func (c *cache) List() []interface{} {
	return c.storage.List()
}

// ListKeys returns every key, from one consistent state.
func (c *cache) ListKeys() []string {
	return c.storage.ListKeys()
}

// LastStoreSyncResourceVersion returns the last resource version the store
// recorded (see threadSafeMap).
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

// replacement is what replaceList stored: keys[i] and objs[i] (transformed)
// for each object kept, in list order, and the content replaced and the new
// one, both frozen so that the caller can compare them without the lock.
// Their values are held: read them through the store's view.
type replacement struct {
	keys          []string
	objs          []interface{}
	before, after hashmap.Map[any]
}

// replaceList is Replace that also returns what it stored, and one error
// per object of list it left out.
func (c *cache) replaceList(list []interface{}, rv string) (r replacement, dropped []error) {
	e := hashmap.NewEpoch()
	r.after = hashmap.Sized[any](e, len(list))
	r.keys = make([]string, 0, len(list))
	r.objs = make([]interface{}, 0, len(list))
	unique := true
	var twice listedTwice
	for _, obj := range list {
		key, stored, held, err := c.storable(obj)
		if err != nil {
			c.storage.objectErrors.Inc()
			dropped = append(dropped, err)
			continue
		}
		if _, replaced := r.after.Set(e, key, held); replaced {
			unique = false
			if c.metaKeys {
				earlier := r.objs[twice.earlier(r.keys, key)]
				c.storage.reportCollision(errListedTwice, "Object listed twice under one key; the store keeps the later", key, earlier, stored)
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
	r.before = c.storage.replace(r.after, e, rv, order)
	return r, dropped
}

// storable returns obj's key, obj transformed and what the map holds for
// it.
func (c *cache) storable(obj interface{}) (key string, stored, held interface{}, err error) {
	if key, held, ok, err := c.adoptHeld(obj); ok {
		return key, obj, held, err
	}
	if key, err = c.keyOf(obj); err != nil {
		return "", nil, nil, err
	}
	if stored, err = c.transform(obj); err != nil {
		return "", nil, nil, err
	}
	if held, err = c.storage.hold(key, stored); err != nil {
		return "", nil, nil, err
	}
	return key, stored, held, nil
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
	b := getWriteBatch(len(txns))
	defer b.release()
	b.byName = c.metaKeys
	for _, t := range txns {
		key, err := c.keyOf(t.Object)
		b.ws = append(b.ws, write{key: key, typ: t.Type, obj: t.Object, err: err})
	}
	c.storage.apply(b)
	return b.transactionError()
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
