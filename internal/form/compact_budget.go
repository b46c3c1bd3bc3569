package form

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/compact"
)

// A memory budget (Cold.Budget) bounds what a compact form counts as its
// memory: every tier's encoded bytes, an estimate of the store's cost per
// object beside them, and the hot cache's decoded objects as estimated.
// A sweep that starts above the budget's low mark compresses objects in
// CLOCK order (untouched since the last sweep first, then, on a second
// walk, the rest) down to it, and then gives the hot cache what room is
// left. Writes between sweeps compress at once while the form is over its
// budget, and wake a sweep: the room between the low mark and the budget
// is what writes fill before the next sweep is needed. A list's objects,
// which wait for the whole list out of any sweep's reach, compress from an
// eighth of it (listPlainShare). When every object compressed still does
// not fit, every object is kept: the form says so (Stats, a log line once).

// entryOverhead estimates what an informer spends per object beside its
// encoding: the key, the map's and the namespace index's slots (about
// 100 B measured, docs/MEMORY.md "Per-entry overhead"), the label table's
// entry and the encoding's size-class rounding.
const entryOverhead = 200

// decodedPerByte estimates the heap of a hot object per byte of its plain
// encoding: a stripped realistic pod decodes to 3.1 times its 3.9 KB
// encoding, one with its managedFields to 1.24 times its 10.4 KB (measured
// 2026-12-06, docs/MEMORY.md); the rest covers the hot entry itself. The
// hot cache holds one version per key once the write that replaced it
// has read it (compact.HotCache's TakeOld).
const decodedPerByte = 4

// DictionaryCost is what a budget counts for each dictionary: its content,
// the encoder's tables and the decoders (coldtier, ~0.9 MB).
const DictionaryCost = 900 << 10

// budget is a compact form's memory budget; see above.
type budget struct {
	limit int64
	// hotObjects is the hot cache's size as configured, hotLimit its size
	// now, which the sweeps set.
	hotObjects int
	hotLimit   atomic.Int64
	// plainBytes and plainHolds sum the plain encodings made, for the
	// size of a typical object.
	plainBytes, plainHolds atomic.Int64
	// cooling is set by a sweep that started over the low mark; only the
	// sweep reads or writes it.
	cooling bool
	// over is set by a sweep that ended over the limit with every object
	// it could compress compressed; reported once it was logged.
	over, reported atomic.Bool
	// wake is sent to, without blocking, by a write over the limit.
	wake chan struct{}
}

// low is where a sweep over the budget stops compressing, and what the
// hot cache may fill up to: below the limit, so that a few writes do not
// send the form over it again at once.
func (b *budget) low() int64 { return b.limit - b.limit/8 }

// typical is the mean size of a plain encoding made so far; 0 before any.
func (b *budget) typical() int64 {
	n := b.plainHolds.Load()
	if n == 0 {
		return 0
	}
	return b.plainBytes.Load() / n
}

// reservoir keeps a uniform sample of the encodings offered, for a
// dictionary made before any sweep: a list's first objects alone would be
// one owner's.
type reservoir struct {
	seen  int
	picks []compact.Encoding
	rng   *rand.Rand
}

// offer counts e and keeps it with the probability that keeps the picks
// uniform over everything offered.
func (r *reservoir) offer(e compact.Encoding, size int) {
	r.seen++
	if len(r.picks) < size {
		r.picks = append(r.picks, e)
		return
	}
	if j := r.rng.IntN(r.seen); j < size {
		r.picks[j] = e
	}
}

// budgetOf is f's budget, nil without one.
func (f *Compact) budgetOf() *budget {
	if f.cold == nil {
		return nil
	}
	return f.cold.budget
}

// stored is what the form counts of its encodings: their bytes, the
// store's cost per object and the dictionaries.
func (f *Compact) stored() (bytes, objects int64) {
	b, n := f.labels.counted()
	dicts, _ := f.dictionaries()
	return b + n*entryOverhead + dicts*DictionaryCost, n
}

// counted is what the budget b counts: stored and the hot cache's room,
// at a typical object's decoded size.
func (f *Compact) counted(b *budget) int64 {
	s, n := f.stored()
	if f.hot == nil {
		return s
	}
	return s + min(b.hotLimit.Load(), n)*b.typical()*decodedPerByte
}

// listPlainShare is the share of the budget (1/listPlainShare) a list's
// objects may fill plain before they are compressed as they arrive. It is
// small because the moment the list is stored is when the informer holds
// most beside its store: every handler's initial list queued (a box per
// object) and decoded at tens of thousands of objects a second, faster
// than the collector frees them. At 100k pods under a 128 MiB budget that
// was 30-60 MiB the budget does not count (docs/MEMORY.md): with a
// quarter of the budget held plain the live heap peaked at 1.14 times the
// budget, with an eighth at 1.05 times. A smaller share did not help: the
// dictionary, made before the list compresses, then sees only the list's
// first pods (a watch-list streams them in key order, one namespace after
// another).
const listPlainShare = 8

// holdBudgeted is what a write of e, a plain encoding made by codec,
// stores under f's budget: e, or e compressed while over the budget (from
// 1/listPlainShare of it for a list's object, ahead). It feeds the
// dictionary's sample until the codec has one, and makes it from half
// that share, from what it has by the time a list compresses.
func (f *Compact) holdBudgeted(codec *compact.Codec, e compact.Encoding, ahead bool) compact.Encoding {
	b := f.budgetOf()
	if b == nil {
		return e
	}
	b.plainBytes.Add(int64(e.Len()))
	b.plainHolds.Add(1)
	f.capHot(b)
	total := f.counted(b) + int64(e.Len()) + entryOverhead
	if !codec.HasDictionary() {
		f.cold.offer(codec, e)
		if total > b.limit/(2*listPlainShare) {
			f.cold.makeFromReservoir(codec, total > b.limit/listPlainShare)
		}
	}
	if total > b.limit && !b.over.Load() {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	if total <= b.limit && (!ahead || total <= b.limit/listPlainShare) {
		return e
	}
	cold, smaller, err := codec.Cool(e)
	if err != nil || !smaller {
		return e // a failure to compress is the sweep's to report
	}
	f.cold.countCooled(e, cold)
	return cold
}

// capHot keeps the hot cache to a quarter of the budget b until a sweep
// sizes it to the room the objects leave: the typical object is known from
// the first write on.
func (f *Compact) capHot(b *budget) {
	if f.hot == nil {
		return
	}
	most := b.limit / 4 / max(b.typical()*decodedPerByte, 1)
	if cur := b.hotLimit.Load(); cur > most && b.hotLimit.CompareAndSwap(cur, most) {
		f.hot.SetCapacity(int(most))
	}
}

// offer samples e for codec's dictionary.
func (t *coldTier) offer(codec *compact.Codec, e compact.Encoding) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.pool[codec]
	if r == nil {
		r = &reservoir{rng: rand.New(rand.NewPCG(1, 2))}
		t.pool[codec] = r
	}
	r.offer(e, t.cfg.Samples)
}

// minUrgentSamples is the fewest samples a write makes a dictionary from
// when it needs one (a sweep makes it from what it has): one object's
// encoding makes a dictionary for few others.
const minUrgentSamples = 16

// makeFromReservoir makes codec's dictionary from its reservoir once the
// reservoir is full, or, when urgent, has minUrgentSamples; no-op once
// made.
func (t *coldTier) makeFromReservoir(codec *compact.Codec, urgent bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.pool[codec]
	if r == nil || len(r.picks) < min(t.cfg.Samples, minUrgentSamples) || (!urgent && len(r.picks) < t.cfg.Samples) {
		return
	}
	delete(t.pool, codec)
	t.makeLocked(codec, r.picks)
}

// makeNow makes codec's dictionary from its reservoir, whatever it holds.
func (t *coldTier) makeNow(codec *compact.Codec) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.pool[codec]; r != nil {
		delete(t.pool, codec)
		t.makeLocked(codec, r.picks)
	}
}

// Wake is sent to when a write finds the form over its budget, so that its
// sweeper sweeps before its period is up; nil without a budget.
func (f *Compact) Wake() <-chan struct{} {
	if b := f.budgetOf(); b != nil {
		return b.wake
	}
	return nil
}

// SweepPass is called before each walk of a store's Sweep over its keys,
// pass 0 first, and reports whether to walk: once, and a second time when
// a budget is still exceeded after the first walk has cleared every
// reference bit (CLOCK's second round).
func (f *Compact) SweepPass(pass int) bool {
	b := f.budgetOf()
	switch {
	case pass == 0:
		if b != nil {
			// Not "over the limit": writes over it compress themselves,
			// which holds the count at the limit, so the sweep a write
			// woke would find it there and leave it, and every later
			// write would compress at once (one sweep a second, each for
			// nothing).
			b.cooling = f.counted(b) > b.low()
		}
		return true
	case pass == 1 && b != nil && b.cooling && f.counted(b) > b.low():
		f.cold.mu.Lock()
		f.cold.sweep = Tiers{} // the walk counts every object again
		f.cold.mu.Unlock()
		return true
	}
	return false
}

// coolUntouched reports whether an untouched plain object goes cold: always
// with an age (ColdAfter), else while the sweep brings the form under its
// budget.
func (f *Compact) coolUntouched() bool {
	b := f.budgetOf()
	if b == nil || !f.cold.cfg.OnlyOverBudget {
		return true
	}
	return b.cooling && f.counted(b) > b.low()
}

// roomToWarm reports whether cold e, touched, may be stored plain again:
// always without a budget, else when a typical plain object fits under
// the budget's low mark and no sweep is compressing.
func (f *Compact) roomToWarm(e compact.Encoding) bool {
	b := f.budgetOf()
	if b == nil {
		return true
	}
	return !b.cooling && f.counted(b)+b.typical()-int64(e.Len()) <= b.low()
}

// dictionaryFor makes codec's dictionary for a sweep that would compress,
// from the budget's reservoir (offering it e, a plain encoding); without a
// budget, the sweep samples e instead. It reports whether codec can
// compress.
func (f *Compact) dictionaryFor(codec *compact.Codec, key string, e compact.Encoding) bool {
	if codec.HasDictionary() {
		return true
	}
	if f.budgetOf() == nil {
		f.cold.sample(codec, key, e)
		return false
	}
	f.cold.offer(codec, e)
	f.cold.makeNow(codec)
	return codec.HasDictionary()
}

// budgetEnded is the end of a sweep under f's budget: the hot cache gets
// the room left under the low mark, and a form that does not fit with
// every object it could compress compressed says so.
func (f *Compact) budgetEnded(ctx context.Context) {
	b := f.budgetOf()
	if b == nil {
		return
	}
	stored, objects := f.stored()
	if f.hot != nil {
		n := int64(b.hotObjects)
		if per := b.typical() * decodedPerByte; per > 0 {
			n = min(max(b.low()-stored, 0)/per, n)
		}
		if b.hotLimit.Swap(n) != n {
			f.hot.SetCapacity(int(n))
		}
	}
	// Only a sweep that compressed what it could knows the objects do not
	// fit; one that started under the budget leaves that to the next.
	over := stored > b.limit && (b.cooling || b.over.Load())
	b.over.Store(over)
	if over && b.reported.CompareAndSwap(false, true) {
		klog.FromContext(ctx).Info("Warning: compact storage does not fit its memory budget with every object it could compress compressed; every object is kept",
			"budgetBytes", b.limit, "storedBytes", stored, "objects", objects)
	}
}

// NewForOptions returns the compact form for an informer's options: with
// the cold tier's policy when objects may go cold (coldAfter) or must stay
// under a budget, where a budget below 1 is none.
func NewForOptions(hotObjects int, coldAfter time.Duration, budget int64) *Compact {
	budget = max(budget, 0)
	if coldAfter <= 0 && budget == 0 {
		return NewCompact(hotObjects)
	}
	return NewColdCompact(hotObjects, Cold{Budget: budget, OnlyOverBudget: coldAfter <= 0})
}

// budgetSweepPeriod is the time between the sweeps of an informer with a
// budget and no cold tier; writes that exceed the budget start one sooner.
const budgetSweepPeriod = 30 * time.Second

// SweepPeriod is the time between an informer's sweeps, 0 for none: the
// cold tier's age, at least minColdAfter, or budgetSweepPeriod for a
// budget alone.
func SweepPeriod(coldAfter, minColdAfter time.Duration, budget int64) time.Duration {
	switch {
	case coldAfter > 0:
		return max(coldAfter, minColdAfter)
	case budget > 0:
		return budgetSweepPeriod
	}
	return 0
}
