package form

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/openinformer/cache/compactstats"
	"github.com/openinformer/cache/internal/compact"
)

// Cold configures the cold tier of a compact form: encodings that nobody
// has read or written between two sweeps (the store's Sweep, which calls
// Retier for every key) are compressed with a dictionary made from the
// form's own encodings, and a cold encoding read since the last sweep is
// stored plain again at the next. So an object goes cold after between
// one and two sweep periods untouched, and a read of a cold object pays a
// decompression on top of the decode until then.
type Cold struct {
	// DictionarySize bounds each type's dictionary (coldtier.Train); 0 is
	// coldtier.DefaultSize.
	DictionarySize int
	// Samples is how many encodings of a type the first sweep collects
	// before it makes the type's dictionary, or fewer when the next sweep
	// comes back to a key sampled (the type has fewer objects); 0 is
	// DefaultColdSamples.
	Samples int
	// Budget, when positive, bounds the form's memory in bytes (see
	// compact_budget.go): a sweep over it compresses untouched objects
	// whatever their age, then the rest, and shrinks the hot cache.
	Budget int64
	// OnlyOverBudget compresses objects only to keep the form under
	// Budget, never for their age alone.
	OnlyOverBudget bool
}

// DefaultColdSamples spreads a dictionary over objects of many owners and
// namespaces: a sweep walks keys in hash order.
const DefaultColdSamples = 64

// ColdCounts are what the cold tier has done since the form was made.
type ColdCounts struct {
	// Cooled and Warmed count the encodings made cold and plain again;
	// Failed the ones that could not be, which stay as they were.
	Cooled, Warmed, Failed uint64
	// CooledFromBytes and CooledToBytes are the sizes of the encodings
	// cooled, before and after.
	CooledFromBytes, CooledToBytes uint64
}

// Tiers is what a sweep found: the objects and encoded bytes of each tier
// once its moves were made (a move that lost to a write still counts).
type Tiers struct {
	PlainObjects, ColdObjects int
	PlainBytes, ColdBytes     int64
}

// add counts one encoding of size bytes, of the tier cold says.
func (t *Tiers) add(size int64, cold bool) {
	if cold {
		t.ColdObjects++
		t.ColdBytes += size
		return
	}
	t.PlainObjects++
	t.PlainBytes += size
}

// coldTier is a compact form's cold tier. Only a sweep calls into it, but
// several stores' sweeps may share nothing else, so samples has a lock.
type coldTier struct {
	cfg Cold

	mu      sync.Mutex
	samples map[*compact.Codec]map[string]compact.Encoding // by key, per codec without a dictionary yet
	sweep   Tiers                                          // the sweep under way
	last    Tiers                                          // the last sweep's, once ended
	pool    map[*compact.Codec]*reservoir                  // with a budget: samples by codec, until it has a dictionary
	swept   time.Duration                                  // the time sweeps took

	budget *budget // nil without one

	cooled, warmed, failed atomic.Uint64
	// cooledFrom and cooledTo are the bytes of the encodings cooled,
	// before and after: their ratio is the dictionary's.
	cooledFrom, cooledTo atomic.Uint64
}

// NewColdCompact is NewCompact with a cold tier.
func NewColdCompact(hotObjects int, cold Cold) *Compact {
	f := NewCompact(hotObjects)
	if cold.Samples <= 0 {
		cold.Samples = DefaultColdSamples
	}
	f.cold = &coldTier{cfg: cold, samples: map[*compact.Codec]map[string]compact.Encoding{}, pool: map[*compact.Codec]*reservoir{}}
	if cold.Budget > 0 {
		f.cold.budget = &budget{limit: cold.Budget, hotObjects: max(hotObjects, 0), wake: make(chan struct{}, 1)}
		f.cold.budget.hotLimit.Store(int64(max(hotObjects, 0)))
	}
	return f
}

// Retier moves key's encoding between tiers: a plain one untouched since
// the last sweep becomes cold, a cold one touched becomes plain. It clears
// the key's touch, so each call starts a new period. Most keys stay where
// they are, and their label entry says so without the encoding being
// read: a sweep walks every key, and an encoding's first byte is a cache
// miss.
func (f *Compact) Retier(key string, held any) (any, bool) {
	e, ok := held.(compact.Encoding)
	if f.cold == nil || !ok {
		return nil, false
	}
	entry, known := f.labels.untouch(key, e)
	if !known { // an entry lost to a racing write: e untouched, as it reads
		entry = labelEntry{size: uint32(e.Len()), cold: e.Compressed()}
	}
	if entry.touched != entry.cold { // used and plain, or unused and cold
		f.cold.tally(int64(entry.size), entry.cold)
		return e, false
	}
	codec, err := f.codecOf(e)
	if err != nil {
		return nil, false
	}
	next, moved := f.retier(codec, key, e, entry.touched)
	if !moved {
		next = e
	}
	f.cold.tally(int64(next.Len()), codec.Cold(next))
	return next, moved
}

// retier is Retier of key's e, made by codec, touched or not since the
// last sweep, when it may move: touched and cold, or untouched and plain.
func (f *Compact) retier(codec *compact.Codec, key string, e compact.Encoding, touched bool) (compact.Encoding, bool) {
	switch cold := codec.Cold(e); {
	case touched && cold:
		if !f.roomToWarm(e) {
			return e, false
		}
		next, err := codec.Warm(e)
		next, moved := f.moved(key, e, next, err)
		if moved {
			f.cold.warmed.Add(1)
		}
		return next, moved
	case !touched && !cold:
		if !f.coolUntouched() || !f.dictionaryFor(codec, key, e) {
			return e, false
		}
		next, smaller, err := codec.Cool(e)
		if err == nil && !smaller {
			return e, false
		}
		next, moved := f.moved(key, e, next, err)
		if moved {
			f.cold.countCooled(e, next)
		}
		return next, moved
	}
	return e, false
}

// moved finishes a move of key from e to next: the key's labels follow
// next, and the caller counts the move; a failure is reported, without
// the object's contents, and e stays.
func (f *Compact) moved(key string, e, next compact.Encoding, err error) (compact.Encoding, bool) {
	if err != nil {
		f.cold.failed.Add(1)
		utilruntime.HandleErrorWithContext(context.TODO(), err, "Cold tier could not move an object, left as it is", "key", key)
		return e, false
	}
	f.labels.rekey(key, e, next)
	return next, true
}

// countCooled counts the move of plain to cold.
func (t *coldTier) countCooled(plain, cold compact.Encoding) {
	t.cooled.Add(1)
	t.cooledFrom.Add(uint64(plain.Len()))
	t.cooledTo.Add(uint64(cold.Len()))
}

// tally counts an encoding of size bytes, of the tier cold says, in the
// sweep under way.
func (t *coldTier) tally(size int64, cold bool) {
	t.mu.Lock()
	t.sweep.add(size, cold)
	t.mu.Unlock()
}

// SweepEnded publishes the tiers the sweep just ended found (Stats),
// counts the time it took, and starts the next count; under a budget, it
// sizes the hot cache and reports a budget the objects cannot fit in
// (logged once to ctx's logger).
func (f *Compact) SweepEnded(ctx context.Context, took time.Duration) {
	if f.cold == nil {
		return
	}
	f.cold.mu.Lock()
	f.cold.last, f.cold.sweep = f.cold.sweep, Tiers{}
	f.cold.swept += took
	f.cold.mu.Unlock()
	f.budgetEnded(ctx)
}

// sample keeps key's e for codec's dictionary, and makes it once there
// are enough, or once a sweep comes back to a key sampled.
func (t *coldTier) sample(codec *compact.Codec, key string, e compact.Encoding) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.samples[codec]
	if s == nil {
		s = map[string]compact.Encoding{}
		t.samples[codec] = s
	}
	_, wrapped := s[key]
	s[key] = e
	if !wrapped && len(s) < t.cfg.Samples {
		return
	}
	delete(t.samples, codec)
	samples := make([]compact.Encoding, 0, len(s))
	for _, k := range slices.Sorted(maps.Keys(s)) { // the same dictionary every run
		samples = append(samples, s[k])
	}
	t.makeLocked(codec, samples)
}

// makeLocked makes codec's dictionary from samples; t.mu is held.
func (t *coldTier) makeLocked(codec *compact.Codec, samples []compact.Encoding) {
	if _, err := codec.MakeDictionary(samples, t.cfg.DictionarySize); err != nil {
		utilruntime.HandleErrorWithContext(context.TODO(), err, "Cold tier could not make a dictionary; objects stay uncompressed")
	}
}

// dictionaries counts the dictionaries of f's codecs, made by a sweep or
// adopted from a restart snapshot, and their bytes.
func (f *Compact) dictionaries() (n int64, size int) {
	if p := f.byTag.Load(); p != nil {
		for _, c := range *p {
			if s := c.DictionarySize(); s > 0 {
				n, size = n+1, size+s
			}
		}
	}
	return n, size
}

// ColdCounts returns the cold tier's counts; zero without one.
func (f *Compact) ColdCounts() ColdCounts {
	if f.cold == nil {
		return ColdCounts{}
	}
	return ColdCounts{Cooled: f.cold.cooled.Load(), Warmed: f.cold.warmed.Load(), Failed: f.cold.failed.Load(),
		CooledFromBytes: f.cold.cooledFrom.Load(), CooledToBytes: f.cold.cooledTo.Load()}
}

// Stats returns what the form holds and has done, for metrics.
func (f *Compact) Stats() compactstats.Stats {
	c := f.ColdCounts()
	s := compactstats.Stats{Cooled: c.Cooled, Warmed: c.Warmed, MoveFailures: c.Failed,
		CooledFromBytes: c.CooledFromBytes, CooledToBytes: c.CooledToBytes,
		HotReads: f.reads.hot.Load(), PlainDecodes: f.reads.plain.Load(), ColdDecodes: f.reads.cold.Load()}
	_, s.DictionaryBytes = f.dictionaries()
	if f.cold != nil {
		f.cold.mu.Lock()
		defer f.cold.mu.Unlock()
		t := f.cold.last
		s.PlainObjects, s.ColdObjects, s.PlainBytes, s.ColdBytes = t.PlainObjects, t.ColdObjects, t.PlainBytes, t.ColdBytes
		s.SweepSeconds = f.cold.swept.Seconds()
	}
	if b := f.budgetOf(); b != nil {
		s.BudgetBytes, s.BudgetedBytes, s.OverBudget = b.limit, f.counted(b), b.over.Load()
		s.HotLimit = int(b.hotLimit.Load())
	}
	return s
}
