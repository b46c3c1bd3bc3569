// Compact storage (an opt-in, see CompactOptions) keeps each cached object
// as its encoding rather than as a decoded tree of structs, maps and
// strings: protobuf for the built-in API types, CBOR for unstructured
// objects and other types the scheme knows, JSON for the rest, all through
// apimachinery's serializers. A cached pod then costs about half the heap,
// and a fifth with StripManagedFields. Index values are computed from the
// written object and kept (on a watch-list sync, as each object arrives, so
// the store's initial fill decodes nothing), so IndexKeys, ListKeys and
// ListIndexFuncValues never decode; reads that return objects decode them after the store's
// lock is released, unless a bounded cache of recently decoded objects
// still holds the object decoded from the same bytes. A write puts the
// written object in that cache, so reading an object back, and the old
// object of its next update, usually cost no decode. An object read from
// the cache is shared, as in the default mode; an object decoded afresh
// belongs to the caller, so mutating it does not change the cache.
package cache

// CompactOptions turns on compact storage: objects are kept encoded.
type CompactOptions struct {
	// HotObjects bounds the cache of recently decoded objects; 0 (the zero
	// value) or a negative value means none, so that every read decodes and
	// the store keeps no decoded object. DefaultHotObjects is the size
	// this package's examples and benchmarks use.
	HotObjects int
}

// DefaultHotObjects is a hot cache for the objects a controller works on
// at one time: about 25 MB of typical pods, and with it reading an object
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
