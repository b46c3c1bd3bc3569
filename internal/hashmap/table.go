package hashmap

import (
	"math/bits"
	"slices"
)

// A slot's distance byte is 0 for an empty slot, otherwise the entry's
// distance from its home slot plus one, saturating at sat. A saturated
// entry's distance is at least sat-1 and is recomputed from its hash when
// needed, which only long runs of colliding hashes reach.
const (
	distBits = 8
	sat      = 1<<distBits - 1
)

// metaOf is the distance byte of an entry at distance d from home.
func metaOf(d int) uint8 { return uint8(min(d+1, sat)) }

// table is one open-addressing table with Robin Hood linear probing: along
// a probe run, entries are ordered by their distance from their home slot
// (never rising by more than one from slot to slot), so a lookup stops as
// soon as it meets an entry closer to home than it would be, and compares
// only the entries at its own distance, the ones sharing its home slot,
// by hash first. No key is hashed again: each slot keeps its key's hash32,
// from which growing and splitting place it. All keys of a table share
// the top depth bits of their hashes; the home slot scales the bits below
// them to the table's size, which need not be a power of two, so that
// tables can be sized to the load they are meant for.
type table[V any] struct {
	epoch Epoch
	depth uint8
	used  int
	slots []slot[V]
}

func newTable[V any](e Epoch, depth uint8, n int) *table[V] {
	return &table[V]{epoch: e, depth: depth, slots: make([]slot[V], n)}
}

// home is the slot where a key whose hash32 is h belongs. Past a directory
// depth of 20 (over a hundred million keys), fewer than 12 bits are left
// to scale, and homes spread less evenly.
func (t *table[V]) home(h uint32) int {
	hi, _ := bits.Mul64(uint64(h)<<32<<t.depth, uint64(len(t.slots)))
	return int(hi)
}

func (t *table[V]) next(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// distAt is the distance of the entry in slot i, whose distance byte is
// m. The common case stays small enough to inline.
func (t *table[V]) distAt(i int, m uint8) int {
	if m < sat {
		return int(m) - 1
	}
	return t.satDist(i)
}

// satDist is the distance of the saturated entry in slot i, from its hash.
func (t *table[V]) satDist(i int) int {
	d := i - t.home(t.slots[i].hash)
	if d < 0 {
		d += len(t.slots)
	}
	return d
}

// find returns the index of key's slot, or -1.
func (t *table[V]) find(h uint32, key string) int {
	if i, _, found := t.probe(h, key, true); found {
		return i
	}
	return -1
}

// probe walks the probe run of a key whose hash32 is h. It returns the
// key's slot if it finds it (only when compare is set), or else the slot
// where the key belongs and its distance from home there: the first slot
// that is empty or holds an entry closer to its home.
func (t *table[V]) probe(h uint32, key string, compare bool) (i, d int, found bool) {
	slots := t.slots
	for i = t.home(h); ; d++ {
		s := &slots[i]
		m := s.meta()
		if m == 0 {
			return i, d, false
		}
		// A saturated entry is farther from home than any d below sat-1.
		if m < sat || d >= sat-1 {
			switch sd := t.distAt(i, m); {
			case sd < d:
				return i, d, false
			case compare && sd == d && s.hash == h && s.key() == key:
				return i, d, true
			}
		}
		if i++; i == len(slots) {
			i = 0
		}
	}
}

// insert stores an entry for a key the table does not hold in a table
// that is not full, and returns its slot.
func (t *table[V]) insert(in slot[V]) int {
	i, d, _ := t.probe(in.hash, "", false)
	in.setMeta(metaOf(d))
	return t.insertAt(i, in)
}

// insertAt stores an entry in slot i, where probe found it belongs, its
// distance byte set for that slot. Entries closer to home than the
// newcomer would be move one step down the run to make way.
func (t *table[V]) insertAt(i int, in slot[V]) int {
	// Every entry from i to the end of the run moves one step down: each
	// is counted one step farther from home on the way to the end.
	end := i
	for s := &t.slots[end]; s.meta() != 0; s = &t.slots[end] {
		if s.meta() != sat {
			s.info++
		}
		end = t.next(end)
	}
	switch {
	case end > i:
		copy(t.slots[i+1:end+1], t.slots[i:end])
	case end < i:
		copy(t.slots[1:end+1], t.slots[:end])
		n := len(t.slots)
		t.slots[0] = t.slots[n-1]
		copy(t.slots[i+1:], t.slots[i:n-1])
	}
	t.slots[i] = in
	t.used++
	return i
}

// removeAt empties slot i and moves the rest of its probe run one step
// back, up to an empty slot or an entry already at home.
func (t *table[V]) removeAt(i int) {
	hole := i
	for next := t.next(hole); t.slots[next].meta() > 1; next = t.next(next) {
		t.slots[hole] = t.slots[next]
		if s := &t.slots[hole]; s.meta() == sat {
			s.setMeta(metaOf(t.satDist(hole)))
		} else {
			s.info--
		}
		hole = next
	}
	t.slots[hole] = slot[V]{}
	t.used--
}

func (t *table[V]) clone(e Epoch) *table[V] {
	return &table[V]{epoch: e, depth: t.depth, used: t.used, slots: slices.Clone(t.slots)}
}

// walkStart is an empty slot, where a walk of the table in the order of
// its entries' home slots starts and ends. Rehashing in that order appends
// each entry to the end of its run in the new table.
func (t *table[V]) walkStart() int {
	return slices.IndexFunc(t.slots, func(s slot[V]) bool { return s.meta() == 0 })
}
