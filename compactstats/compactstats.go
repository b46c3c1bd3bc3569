// Package compactstats describes what an informer's compact storage holds
// and has done, for metrics providers: the root package's
// InformerState.Storage returns a Stats, and the Prometheus module exports
// it as the openinformer_storage_* series.
package compactstats

// Stats is what an informer's compact storage holds and has done; zero for
// an informer that keeps objects decoded.
type Stats struct {
	// PlainObjects and ColdObjects, and their encoded bytes, are as of the
	// last sweep of the cold tier (CompactOptions.ColdAfter): zero without
	// one or before the first sweep ended.
	PlainObjects, ColdObjects int
	PlainBytes, ColdBytes     int64
	// Cooled and Warmed count the objects compressed and uncompressed
	// again; MoveFailures the moves that failed, leaving the object as it
	// was (each is logged).
	Cooled, Warmed, MoveFailures uint64
	// CooledFromBytes and CooledToBytes are the encoded sizes of the
	// objects compressed, before and after: CooledToBytes/CooledFromBytes
	// is the dictionary's compression ratio.
	CooledFromBytes, CooledToBytes uint64
	// DictionaryBytes is the size of the cold tier's dictionaries, made by
	// its sweeps or read back from a restart snapshot.
	DictionaryBytes int
	// SweepSeconds is the time the cold tier's sweeps took.
	SweepSeconds float64
	// HotReads are the reads the hot cache answered; PlainDecodes and
	// ColdDecodes the reads that decoded an object, by its tier.
	HotReads, PlainDecodes, ColdDecodes uint64
	// BudgetBytes is CompactOptions.MemoryBudget; 0 without one, and then
	// the fields below are zero too.
	BudgetBytes int64
	// BudgetedBytes is what the budget counts now: the encodings of every
	// tier, an estimate of the store's cost per object, and the hot
	// cache's room at a typical object's decoded size.
	BudgetedBytes int64
	// OverBudget is set while the objects do not fit in the budget with
	// every object that compresses compressed, as of the last sweep:
	// every object is kept all the same.
	OverBudget bool
	// HotLimit is the hot cache's size as the budget sets it.
	HotLimit int
}
