package hashmap

import (
	"math/bits"
	"slices"
)

// A table keeps a meta byte per slot: 0 for an empty slot; otherwise, in
// its low bits, the entry's distance from its home slot plus one,
// saturating at sat, and in its high bits a tag of three hash bits that
// spares most comparisons with keys sharing the home slot (and the cache
// miss of reading them). A saturated entry's distance is at least sat-1
// and is recomputed from its key's hash when needed, which only long runs
// of colliding hashes reach.
const (
	distBits = 5
	distMask = 1<<distBits - 1
	sat      = distMask
)

// metaOf is the meta byte of an entry with tag bits tag at distance d from
// home.
func metaOf(tag uint8, d int) uint8 { return tag | uint8(min(d+1, sat)) }

// tagOf is the tag bits of a key whose hash32 is h. They are low bits,
// which neither the directory nor the home slot draws on in all but the
// largest maps.
func tagOf(h uint32) uint8 { return uint8(h) &^ distMask }

// farther is meta byte m for an entry one step farther from home.
func farther(m uint8) uint8 {
	if m&distMask == sat {
		return m
	}
	return m + 1
}

// table is one open-addressing table with Robin Hood linear probing: along
// a probe run, entries are ordered by their distance from their home slot
// (never rising by more than one from slot to slot), so a lookup stops as
// soon as it meets an entry closer to home than it would be, and compares
// only the keys at its own distance, the ones sharing its home slot. No
// hash is hashed again: each slot keeps its key's hash32, from which
// growing and splitting place it. All keys of a table share the top depth
// bits of their hashes; the home slot scales the bits below them to the
// table's size, which need not be a power of two, so that tables can be
// sized to the load they are meant for.
type table[V any] struct {
	epoch Epoch
	depth uint8
	used  int
	meta  []uint8
	slots []slot[V]
}

func newTable[V any](e Epoch, depth uint8, n int) *table[V] {
	return &table[V]{epoch: e, depth: depth, meta: make([]uint8, n), slots: make([]slot[V], n)}
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

// distAt is the distance of the entry in slot i, whose meta byte's
// distance bits are df. The common case stays small enough to inline.
func (t *table[V]) distAt(i int, df uint8) int {
	if df < sat {
		return int(df) - 1
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

// probe walks the probe run of a key whose hash32 is h. It returns the key's
// slot if it finds it (only when compare is set), or else the slot where
// the key belongs and its distance from home there: the first slot that
// is empty or holds an entry closer to its home.
func (t *table[V]) probe(h uint32, key string, compare bool) (i, d int, found bool) {
	i, tag := t.home(h), tagOf(h)
	for ; ; i, d = t.next(i), d+1 {
		m := t.meta[i]
		df := m & distMask
		if df == 0 {
			return i, d, false
		}
		// A saturated entry is farther from home than any d below sat-1.
		if df < sat || d >= sat-1 {
			switch sd := t.distAt(i, df); {
			case sd < d:
				return i, d, false
			case compare && sd == d && m&^distMask == tag && t.slots[i].hash == h && t.slots[i].key() == key:
				return i, d, true
			}
		}
	}
}

// insert stores an entry for a key the table does not hold in a table
// that is not full, and returns its slot.
func (t *table[V]) insert(in slot[V]) int {
	i, d, _ := t.probe(in.hash, "", false)
	return t.insertAt(i, d, in)
}

// insertAt stores an entry in slot i, at distance d from its home, as
// probe found them. Entries closer to home than the newcomer would be move
// one step down the run to make way.
func (t *table[V]) insertAt(i, d int, in slot[V]) int {
	end := i
	for t.meta[end] != 0 {
		end = t.next(end)
	}
	if end >= i {
		copy(t.slots[i+1:end+1], t.slots[i:end])
		copy(t.meta[i+1:end+1], t.meta[i:end])
	} else {
		copy(t.slots[1:end+1], t.slots[:end])
		copy(t.meta[1:end+1], t.meta[:end])
		n := len(t.slots)
		t.slots[0], t.meta[0] = t.slots[n-1], t.meta[n-1]
		copy(t.slots[i+1:], t.slots[i:n-1])
		copy(t.meta[i+1:], t.meta[i:n-1])
	}
	for j := t.next(i); j != t.next(end); j = t.next(j) {
		t.meta[j] = farther(t.meta[j])
	}
	t.slots[i], t.meta[i] = in, metaOf(tagOf(in.hash), d)
	t.used++
	return i
}

// removeAt empties slot i and moves the rest of its probe run one step
// back, up to an empty slot or an entry already at home.
func (t *table[V]) removeAt(i int) {
	hole := i
	for next := t.next(hole); t.meta[next]&distMask > 1; next = t.next(next) {
		m := t.meta[next]
		t.slots[hole] = t.slots[next]
		t.meta[hole] = m - 1
		if m&distMask == sat {
			t.meta[hole] = metaOf(m&^distMask, t.distAt(hole, sat))
		}
		hole = next
	}
	t.slots[hole], t.meta[hole] = slot[V]{}, 0
	t.used--
}

func (t *table[V]) clone(e Epoch) *table[V] {
	return &table[V]{epoch: e, depth: t.depth, used: t.used, meta: slices.Clone(t.meta), slots: slices.Clone(t.slots)}
}

// walkStart is an empty slot, where a walk of the table in the order of
// its entries' home slots starts and ends. Rehashing in that order appends
// each entry to the end of its run in the new table.
func (t *table[V]) walkStart() int { return slices.Index(t.meta, 0) }
