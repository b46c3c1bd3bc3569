package cache

import "github.com/openinformer/cache/internal/form"

// CompactOptions turns on compact storage: objects are kept encoded.
type CompactOptions struct {
	// HotObjects bounds the cache of recently decoded objects; 0 (the zero
	// value) or a negative value means none, so that every read decodes and
	// the store keeps no decoded object. DefaultHotObjects is the size
	// this package's examples and benchmarks use.
	HotObjects int
}

// DefaultHotObjects is a hot cache for the objects a controller works on
// at one time: about 23.5 MB of typical pods, and with it reading an object
// back soon after its write, and the old object of its next update, cost
// no decode.
const DefaultHotObjects = 1000

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
	return withStoredForm(form.NewCompact(o.HotObjects))
}

// compactStoreOptions is the store option of an informer's
// SharedIndexInformerOptions.Compact: none when it is nil.
func compactStoreOptions(o *CompactOptions) []StoreOption {
	if o == nil {
		return nil
	}
	return []StoreOption{o.storeOption()}
}
