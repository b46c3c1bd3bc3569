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
	// DictionaryBytes is the size of the cold tier's dictionaries.
	DictionaryBytes int
	// SweepSeconds is the time the cold tier's sweeps took.
	SweepSeconds float64
	// HotReads are the reads the hot cache answered; PlainDecodes and
	// ColdDecodes the reads that decoded an object, by its tier.
	HotReads, PlainDecodes, ColdDecodes uint64
}
