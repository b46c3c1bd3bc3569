package cache

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

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
	return newCache(keyFunc, indexers, append(storeOpts[:len(storeOpts):len(storeOpts)], opts.storeOption()))
}

// storeOption turns compact storage on in a store.
func (o CompactOptions) storeOption() StoreOption {
	f := form.NewCompact(o.HotObjects)
	if o.ColdAfter > 0 {
		f = form.NewColdCompact(o.HotObjects, form.Cold{})
	}
	return func(c *cache) { c.form, c.compact = f, f }
}

// coldSweepPeriod is the time between an informer's sweeps; 0 for none.
func coldSweepPeriod(o *CompactOptions) time.Duration {
	if o == nil || o.ColdAfter <= 0 {
		return 0
	}
	return max(o.ColdAfter, MinColdAfter)
}

// runColdSweeps sweeps c every period until ctx ends: the cold tier's
// background work, owned by the informer's Run.
func runColdSweeps(ctx context.Context, clk clock.Clock, c *cache, period time.Duration) {
	logger := klog.FromContext(ctx)
	t := clk.NewTimer(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		start := clk.Now()
		moved := c.storage.Sweep(ctx)
		took := clk.Since(start)
		c.compact.SweepEnded(took)
		logger.V(4).Info("Cold tier swept", "moved", moved, "duration", took)
		t.Reset(period)
	}
}

// compactStoreOptions is the store option of an informer's
// SharedIndexInformerOptions.Compact: none when it is nil.
func compactStoreOptions(o *CompactOptions) []StoreOption {
	if o == nil {
		return nil
	}
	return []StoreOption{o.storeOption()}
}

// StorageStats is what an informer's compact storage holds and has done;
// zero for an informer that keeps objects decoded. Metrics providers read
// it through InformerState.
type StorageStats struct {
	// PlainObjects and ColdObjects, and their encoded bytes, are as of the
	// last sweep of the cold tier (CompactOptions.ColdAfter): zero without
	// one or before the first sweep ended.
	PlainObjects, ColdObjects int
	PlainBytes, ColdBytes     int64
	// Cooled and Warmed count the objects compressed and uncompressed
	// again; MoveFailures the moves that failed, leaving the object as it
	// was (each is logged).
	Cooled, Warmed, MoveFailures uint64
	// DictionaryBytes is the size of the cold tier's dictionaries.
	DictionaryBytes int
	// SweepSeconds is the time the cold tier's sweeps took.
	SweepSeconds float64
	// HotReads are the reads the hot cache answered; PlainDecodes and
	// ColdDecodes the reads that decoded an object, by its tier.
	HotReads, PlainDecodes, ColdDecodes uint64
}

// storageStats reads c's StorageStats.
func (c *cache) storageStats() StorageStats {
	if c.compact == nil {
		return StorageStats{}
	}
	s := c.compact.Stats()
	return StorageStats{
		PlainObjects: s.Tiers.PlainObjects, ColdObjects: s.Tiers.ColdObjects,
		PlainBytes: s.Tiers.PlainBytes, ColdBytes: s.Tiers.ColdBytes,
		Cooled: s.Cooled, Warmed: s.Warmed, MoveFailures: s.Failed,
		DictionaryBytes: s.DictionaryBytes,
		SweepSeconds:    s.SweepTime.Seconds(),
		HotReads:        s.HotReads, PlainDecodes: s.PlainDecodes, ColdDecodes: s.ColdDecodes,
	}
}
