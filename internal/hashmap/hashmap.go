// Package hashmap is a persistent (structurally shared) hash map from
// string keys to values, built for a store that many goroutines read while
// one writes.
//
// The layout is extendible hashing: a directory indexed by the top bits of
// a key's 64-bit hash points to small open-addressing tables (linear
// probing, each slot holding the full hash), so a lookup is a directory
// read, a table read and usually one probe, like a Go map's. Each table
// covers a power-of-two share of the hash space; a full table splits in two
// by the next hash bit, doubling the directory only when the table's share
// was already the directory's finest.
//
// A Map value is a snapshot: copying it is O(1) and the copy never changes.
// Writes go through an Epoch, the identity of one writer's editing session:
// a directory or table created in the current epoch belongs to that writer
// and is changed in place, all others are copied first. A writer that hands
// a snapshot to a reader must move to a fresh epoch (NewEpoch) before its
// next write, so that nothing the reader can see is ever changed again.
// Between snapshots a run of writes costs what it costs on a mutable map.
package hashmap

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"
)

const (
	// minSlots is the size of a new map's only table: small sets, which
	// indexes hold by the thousand, stay small.
	minSlots = 2
	// maxSlots is the size past which a full table splits instead of
	// doubling. It bounds what the first write after a snapshot copies.
	maxSlots = 256
	// maxDepth bounds the directory (1<<maxDepth entries, 8 MB). Seeded
	// hashes reach it only past a hundred million keys; past it tables
	// grow instead of splitting, so a skewed hash function costs speed,
	// not unbounded memory.
	maxDepth = 20
)

// full reports whether a table of n slots holding used entries has no room
// for another. Robin Hood probing keeps runs short up to seven eighths
// full, and an empty slot always remains to end a probe.
func full(used, n int) bool { return 8*(used+1) > 7*n }

// Epoch identifies one editing session. Parts stamped with the writer's
// current Epoch may be changed in place; the zero Epoch owns nothing.
type Epoch uint64

var lastEpoch atomic.Uint64

// NewEpoch returns an Epoch never returned before in this process.
func NewEpoch() Epoch {
	return Epoch(lastEpoch.Add(1))
}

var seed = maphash.MakeSeed()

// testHash, when a test sets it, replaces the hash so that collisions can
// be forced.
var testHash func(string) uint64

// hashOf is a key's hash as stored in a slot, where 0 marks an empty slot.
func hashOf(key string) uint64 {
	var h uint64
	if testHash != nil {
		// A copy, so that key does not escape: callers may look up with a
		// string that aliases a stack buffer.
		h = testHash(strings.Clone(key))
	} else {
		h = maphash.String(seed, key)
	}
	if h != 0 {
		return h
	}
	return 1
}

type slot[V any] struct {
	hash uint64
	key  string
	val  V
}

// table is one open-addressing table with Robin Hood linear probing: along
// a probe run, entries are ordered by their distance from their home slot
// (the hash's low bits) never dropping by more than one, so a lookup stops
// as soon as it meets an entry closer to home than it would be. All keys of
// a table share the top depth bits of their hashes.
type table[V any] struct {
	epoch Epoch
	depth uint8
	used  int
	slots []slot[V]
}

func newTable[V any](e Epoch, depth uint8, n int) *table[V] {
	return &table[V]{epoch: e, depth: depth, slots: make([]slot[V], n)}
}

func (t *table[V]) mask() uint64 { return uint64(len(t.slots) - 1) }

// dist is how far slot i is from the home of the hash h stored there.
func (t *table[V]) dist(h uint64, i uint64) uint64 { return (i - h) & t.mask() }

// find returns the index of key's slot, or -1.
func (t *table[V]) find(h uint64, key string) int {
	mask := t.mask()
	for i, d := h&mask, uint64(0); ; i, d = (i+1)&mask, d+1 {
		s := &t.slots[i]
		if s.hash == h && s.key == key {
			return int(i)
		}
		if s.hash == 0 || t.dist(s.hash, i) < d {
			return -1
		}
	}
}

// insert stores an entry for a key the table does not hold, in a table
// that is not full, and returns its slot. Entries closer to home than the
// newcomer would be move one step down the run to make way.
func (t *table[V]) insert(in slot[V]) int {
	mask := t.mask()
	i := in.hash & mask
	for d := uint64(0); t.slots[i].hash != 0 && t.dist(t.slots[i].hash, i) >= d; d++ {
		i = (i + 1) & mask
	}
	end := i
	for t.slots[end].hash != 0 {
		end = (end + 1) & mask
	}
	for j := end; j != i; {
		prev := (j - 1) & mask
		t.slots[j] = t.slots[prev]
		j = prev
	}
	t.slots[i] = in
	t.used++
	return int(i)
}

// removeAt empties slot i and moves the rest of its probe run one step
// back, up to an empty slot or an entry already at home.
func (t *table[V]) removeAt(i int) {
	mask := t.mask()
	hole := uint64(i)
	for next := (hole + 1) & mask; t.slots[next].hash != 0 && t.dist(t.slots[next].hash, next) > 0; next = (next + 1) & mask {
		t.slots[hole] = t.slots[next]
		hole = next
	}
	t.slots[hole] = slot[V]{}
	t.used--
}

func (t *table[V]) clone(e Epoch) *table[V] {
	return &table[V]{epoch: e, depth: t.depth, used: t.used, slots: slices.Clone(t.slots)}
}

// rehashed returns a table of n slots, owned by e, with t's entries and the
// given depth; keep, if not nil, picks the entries to take.
func (t *table[V]) rehashed(e Epoch, depth uint8, n int, keep func(uint64) bool) *table[V] {
	out := newTable[V](e, depth, n)
	for i := range t.slots {
		if s := &t.slots[i]; s.hash != 0 && (keep == nil || keep(s.hash)) {
			out.insert(*s)
		}
	}
	return out
}

// directory maps the top depth bits of a hash to its table. A table of
// depth d fills an aligned run of 1<<(depth-d) entries.
type directory[V any] struct {
	epoch  Epoch
	depth  uint8
	tables []*table[V]
}

func (d *directory[V]) index(h uint64) int {
	return int(h >> (64 - uint(d.depth)))
}

// span returns the run of entries that point at the table at index i.
func (d *directory[V]) span(i int) (lo, n int) {
	n = 1 << (d.depth - d.tables[i].depth)
	return i &^ (n - 1), n
}

// setSpan points the run of entries covering index i at t.
func (d *directory[V]) setSpan(i int, t *table[V]) {
	lo, n := d.span(i)
	for j := lo; j < lo+n; j++ {
		d.tables[j] = t
	}
}

// Map is a persistent map from string to V. The zero value is an empty map.
type Map[V any] struct {
	dir  *directory[V]
	size int
}

// Sized returns an empty map, owned by e, laid out for about n keys, so that
// filling it neither doubles tables one step at a time nor splits them: the
// garbage and rehashing of growth are skipped when the size is known, as it
// is for a store's Replace.
func Sized[V any](e Epoch, n int) Map[V] {
	var depth uint8
	for n>>depth > maxSlots*5/8 && depth < maxDepth {
		depth++
	}
	d := &directory[V]{epoch: e, depth: depth, tables: make([]*table[V], 1<<depth)}
	// Four fifths full on average: the few tables that draw more keys than
	// that grow on their own.
	slots := slotsAtLoad(n>>depth, 4, 5)
	for i := range d.tables {
		d.tables[i] = newTable[V](e, depth, slots)
	}
	return Map[V]{dir: d}
}

// Len returns the number of keys.
func (m Map[V]) Len() int { return m.size }

// Get returns the value stored under key.
func (m Map[V]) Get(key string) (V, bool) {
	if m.dir != nil {
		return m.getHashed(hashOf(key), key)
	}
	var zero V
	return zero, false
}

// GetKey is Get that also returns the key as stored, so that a caller who
// built an equal string only for the lookup can keep the stored one.
func (m Map[V]) GetKey(key string) (stored string, val V, ok bool) {
	if m.dir != nil {
		if s := m.slotOf(hashOf(key), key); s != nil {
			return s.key, s.val, true
		}
	}
	return "", val, false
}

func (m Map[V]) getHashed(h uint64, key string) (V, bool) {
	if s := m.slotOf(h, key); s != nil {
		return s.val, true
	}
	var zero V
	return zero, false
}

// slotOf returns the slot holding key, whose hash is h, or nil.
func (m Map[V]) slotOf(h uint64, key string) *slot[V] {
	t := m.dir.tables[m.dir.index(h)]
	if i := t.find(h, key); i >= 0 {
		return &t.slots[i]
	}
	return nil
}

// Set stores val under key, changing parts owned by e in place and copying
// the others. It returns the value it replaced, if any.
func (m *Map[V]) Set(e Epoch, key string, val V) (old V, replaced bool) {
	ref, added := m.Ref(e, key)
	if !added {
		old = *ref
	}
	*ref = val
	return old, !added
}

// Ref returns a pointer to the value under key, through which the caller
// may change it in place, adding key with the zero value if absent. Parts
// on the way are made e's as by Set. The pointer is valid until the next
// write to m.
func (m *Map[V]) Ref(e Epoch, key string) (ref *V, added bool) {
	h := hashOf(key)
	if m.dir == nil {
		m.dir = &directory[V]{epoch: e, tables: []*table[V]{newTable[V](e, 0, minSlots)}}
	}
	for {
		ti := m.dir.index(h)
		t := m.dir.tables[ti]
		if i := t.find(h, key); i >= 0 {
			return &m.owned(e, ti).slots[i].val, false
		}
		if full(t.used, len(t.slots)) {
			m.makeRoom(e, ti)
			continue
		}
		t = m.owned(e, ti)
		i := t.insert(slot[V]{hash: h, key: key})
		m.size++
		return &t.slots[i].val, true
	}
}

// Existing is Ref for a key that is present; for an absent key it returns
// nil and changes nothing.
func (m *Map[V]) Existing(e Epoch, key string) *V {
	if m.dir == nil {
		return nil
	}
	h := hashOf(key)
	ti := m.dir.index(h)
	i := m.dir.tables[ti].find(h, key)
	if i < 0 {
		return nil
	}
	return &m.owned(e, ti).slots[i].val
}

// Delete removes key, changing parts owned by e in place and copying the
// others. It returns the removed value.
func (m *Map[V]) Delete(e Epoch, key string) (V, bool) {
	var zero V
	if m.dir == nil {
		return zero, false
	}
	h := hashOf(key)
	ti := m.dir.index(h)
	i := m.dir.tables[ti].find(h, key)
	if i < 0 {
		return zero, false
	}
	if m.size == 1 {
		old := m.dir.tables[ti].slots[i].val
		*m = Map[V]{}
		return old, true
	}
	t := m.owned(e, ti)
	old := t.slots[i].val
	t.removeAt(i)
	m.size--
	return old, true
}

// ownedDir returns m's directory, copied first unless e owns it.
func (m *Map[V]) ownedDir(e Epoch) *directory[V] {
	if m.dir.epoch != e {
		m.dir = &directory[V]{epoch: e, depth: m.dir.depth, tables: slices.Clone(m.dir.tables)}
	}
	return m.dir
}

// owned returns the table at directory index i, copied first (along with
// the directory) unless e owns it.
func (m *Map[V]) owned(e Epoch, i int) *table[V] {
	t := m.dir.tables[i]
	if t.epoch == e {
		return t
	}
	d := m.ownedDir(e)
	t = t.clone(e)
	d.setSpan(i, t)
	return t
}

// makeRoom replaces the full table at directory index i by a larger one or,
// once it is as large as a table gets, by two halves split on the next hash
// bit. A split that would leave one half empty (keys whose hashes agree on
// that bit, as only forced collisions do) grows the table instead.
func (m *Map[V]) makeRoom(e Epoch, i int) {
	d := m.ownedDir(e)
	t := d.tables[i]
	if len(t.slots) < maxSlots || t.depth == maxDepth {
		d.setSpan(i, t.rehashed(e, t.depth, 2*len(t.slots), nil))
		return
	}
	bit := uint64(1) << (63 - t.depth)
	high := 0
	for j := range t.slots {
		if h := t.slots[j].hash; h != 0 && h&bit != 0 {
			high++
		}
	}
	if high == 0 || high == t.used {
		d.setSpan(i, t.rehashed(e, t.depth, 2*len(t.slots), nil))
		return
	}
	if t.depth == d.depth {
		d.double()
		i *= 2
	}
	lo, n := d.span(i)
	isHigh := func(h uint64) bool { return h&bit != 0 }
	isLow := func(h uint64) bool { return h&bit == 0 }
	low := t.rehashed(e, t.depth+1, slotsFor(t.used-high), isLow)
	hi := t.rehashed(e, t.depth+1, slotsFor(high), isHigh)
	for j := lo; j < lo+n/2; j++ {
		d.tables[j] = low
	}
	for j := lo + n/2; j < lo+n; j++ {
		d.tables[j] = hi
	}
}

// slotsFor is the table size for n entries after a split: at most three
// quarters full, so that it takes a while to fill again.
func slotsFor(n int) int { return slotsAtLoad(n, 3, 4) }

// slotsAtLoad is the smallest table size that n entries fill to at most
// num/den.
func slotsAtLoad(n, num, den int) int {
	size := minSlots
	for den*n > num*size {
		size *= 2
	}
	return size
}

// double splits every directory entry in two, both pointing where it did.
func (d *directory[V]) double() {
	tables := make([]*table[V], 2*len(d.tables))
	for j, t := range d.tables {
		tables[2*j], tables[2*j+1] = t, t
	}
	d.tables = tables
	d.depth++
}

// eachTable calls fn for every table, in directory order, until fn returns
// false.
func (m Map[V]) eachTable(fn func(*table[V]) bool) {
	if m.dir == nil {
		return
	}
	d := m.dir
	for i := 0; i < len(d.tables) && fn(d.tables[i]); {
		i += 1 << (d.depth - d.tables[i].depth)
	}
}

// AppendValues appends every value to dst, in unspecified order.
func (m Map[V]) AppendValues(dst []V) []V {
	m.eachTable(func(t *table[V]) bool {
		for i := range t.slots {
			if t.slots[i].hash != 0 {
				dst = append(dst, t.slots[i].val)
			}
		}
		return true
	})
	return dst
}

// AppendKeys appends every key to dst, in the order AppendValues and Range
// use.
func (m Map[V]) AppendKeys(dst []string) []string {
	m.eachTable(func(t *table[V]) bool {
		for i := range t.slots {
			if t.slots[i].hash != 0 {
				dst = append(dst, t.slots[i].key)
			}
		}
		return true
	})
	return dst
}

// Range calls fn for every key and value, in unspecified order, until fn
// returns false.
func (m Map[V]) Range(fn func(key string, val V) bool) {
	m.eachTable(func(t *table[V]) bool {
		for i := range t.slots {
			if s := &t.slots[i]; s.hash != 0 && !fn(s.key, s.val) {
				return false
			}
		}
		return true
	})
}

// AppendValuesOf appends the value in m of every key of keys that m holds,
// in keys' order. Both maps hash alike, so no key is hashed again.
func AppendValuesOf[V, W any](dst []V, m Map[V], keys Map[W]) []V {
	if m.dir == nil {
		return dst
	}
	keys.eachTable(func(t *table[W]) bool {
		for i := range t.slots {
			if s := &t.slots[i]; s.hash != 0 {
				if v, ok := m.getHashed(s.hash, s.key); ok {
					dst = append(dst, v)
				}
			}
		}
		return true
	})
	return dst
}
