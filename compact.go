package cache

// CompactOptions turns on compact storage: objects are kept encoded.
type CompactOptions struct {
	// HotObjects bounds the cache of recently decoded objects: 0 means the
	// default (1000), a negative value none.
	HotObjects int
}

// NewCompactIndexer returns an Indexer that keeps its objects encoded (see
// CompactOptions), keyed by keyFunc and indexed by indexers. It keeps API
// objects (runtime.Object) only: an object that is not one, a typed object
// whose apiVersion and kind are set to another kind than its Go type's, or
// an unstructured object without them is refused with an error, alone.
// Objects read back equal the ones written under equality.Semantic; see the
// README's "Memory" section for where they differ under reflect.DeepEqual.
func NewCompactIndexer(keyFunc KeyFunc, indexers Indexers, opts CompactOptions, storeOpts ...StoreOption) Indexer {
	return newCache(keyFunc, indexers, append(storeOpts[:len(storeOpts):len(storeOpts)], opts.storeOption()))
}

// storeOption turns compact storage on in a store.
func (o CompactOptions) storeOption() StoreOption {
	return withStoredForm(newCompactForm(o))
}

// compactStoreOptions is the store option of an informer's
// SharedIndexInformerOptions.Compact: none when it is nil.
func compactStoreOptions(o *CompactOptions) []StoreOption {
	if o == nil {
		return nil
	}
	return []StoreOption{o.storeOption()}
}
