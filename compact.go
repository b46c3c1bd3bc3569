package cache

import (
	"fmt"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/openinformer/cache/compactstats"
	"github.com/openinformer/cache/internal/form"
)

// CompactOptions turns on compact storage: objects are kept encoded.
type CompactOptions struct {
	// HotObjects bounds the cache of recently decoded objects; 0 (the zero
	// value) or a negative value means none, so that every read decodes and
	// the store keeps no decoded object. DefaultHotObjects is the size
	// this package's examples and benchmarks use.
	HotObjects int
	// ColdAfter turns the cold tier on: an informer compresses, in the
	// background, each object nobody has read or written for between
	// ColdAfter and twice that, with a dictionary made from its own
	// objects (a realistic pod to about a tenth of its compact size); a
	// read decompresses it, and an object read is kept uncompressed again
	// from the next sweep. 0 (the zero value) keeps every object
	// uncompressed; a positive value below MinColdAfter is raised to it.
	// Only informers sweep: a standalone NewCompactIndexer never compresses.
	ColdAfter time.Duration
	// MemoryBudget, in bytes, bounds what an informer's compact storage
	// counts as its memory: its objects in every tier, an estimate of the
	// store's cost per object, the compression dictionary, and the hot
	// cache's decoded objects as estimated. Over it, the informer compresses objects coldest first
	// (whatever ColdAfter says of their age), from the initial list on,
	// and shrinks the hot cache; when every object compressed still does
	// not fit, it keeps every object, logs that once and says so in
	// InformerState.Storage (the Prometheus module's
	// openinformer_storage_over_budget). It counts no decoded objects
	// that handlers or callers keep. 0 (the zero value) is none; a
	// negative value is reported as an error and means none. Without
	// ColdAfter, objects are compressed only to stay under the budget, by
	// sweeps every 30 s or as soon as writes exceed it.
	// Only informers keep a budget: a standalone NewCompactIndexer
	// ignores it.
	MemoryBudget int64
}

// MinColdAfter is the shortest CompactOptions.ColdAfter: each sweep walks
// every object of the informer.
const MinColdAfter = time.Second

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
	opts.MemoryBudget = 0
	return newCache(keyFunc, indexers, append(storeOpts[:len(storeOpts):len(storeOpts)], opts.storeOption()))
}

// storeOption turns compact storage on in a store.
func (o CompactOptions) storeOption() StoreOption {
	if o.MemoryBudget < 0 {
		utilruntime.HandleError(fmt.Errorf("CompactOptions.MemoryBudget is negative (%d): no memory budget", o.MemoryBudget))
	}
	f := form.NewForOptions(o.HotObjects, o.ColdAfter, o.MemoryBudget)
	return func(c *cache) { c.form, c.compact = f, f }
}

// sweepPeriod is the time between an informer's sweeps; 0 for none.
func (o CompactOptions) sweepPeriod() time.Duration {
	return form.SweepPeriod(o.ColdAfter, MinColdAfter, o.MemoryBudget)
}

// compactStoreOptions is the store option of an informer's
// SharedIndexInformerOptions.Compact: none when it is nil.
func compactStoreOptions(o *CompactOptions) []StoreOption {
	if o == nil {
		return nil
	}
	return []StoreOption{o.storeOption()}
}

// storageStats reads c's compact storage statistics; zero for the
// default form.
func (c *cache) storageStats() compactstats.Stats {
	if c.compact == nil {
		return compactstats.Stats{}
	}
	return c.compact.Stats()
}
