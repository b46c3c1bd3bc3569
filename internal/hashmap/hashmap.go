// Package hashmap is a persistent (structurally shared) hash map from
// string keys to values, built for a store that many goroutines read while
// one writes.
//
// The layout is extendible hashing: a directory indexed by the top bits of
// a key's 64-bit hash points to small open-addressing tables (Robin Hood
// linear probing; a slot holds the key, the value, 32 bits of the key's
// hash and the entry's distance from its home slot), so a lookup is a
// directory read, a table read and usually one key comparison, like a Go
// map's. Each table covers a power-of-two share of the hash space; a full
// table grows, or once it is as large as a table gets splits in two by the
// next hash bit, doubling the directory only when the table's share was
// already the directory's finest.
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

// Hash is key's hash, for the Hashed methods: a caller writing one key to
// several maps hashes it once.
func Hash(key string) uint64 { return hashOf(key) }

// hashKey is the hash32 of key.
func hashKey(key string) uint32 { return hash32(hashOf(key)) }

// hashOf is a key's hash.
func hashOf(key string) uint64 {
	if testHash != nil {
		// A copy, so that key does not escape: callers may look up with a
		// string that aliases a stack buffer.
		return testHash(strings.Clone(key))
	}
	return maphash.String(seed, key)
}

// directory maps the top depth bits of a hash to its table. A table of
// depth d fills an aligned run of 1<<(depth-d) entries.
type directory[V any] struct {
	epoch  Epoch
	depth  uint8
	tables []*table[V]
}

func (d *directory[V]) index(h uint32) int {
	return int(h >> (32 - uint(d.depth)))
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

// Len returns the number of keys.
func (m Map[V]) Len() int { return m.size }

// Get returns the value stored under key.
func (m Map[V]) Get(key string) (V, bool) {
	if m.dir != nil {
		return m.getHashed(hashKey(key), key)
	}
	var zero V
	return zero, false
}

// GetKey is Get that also returns the key as stored, so that a caller who
// built an equal string only for the lookup can keep the stored one.
func (m Map[V]) GetKey(key string) (stored string, val V, ok bool) {
	if m.dir != nil {
		if s := m.slotOf(hashKey(key), key); s != nil {
			return s.key(), s.val, true
		}
	}
	return "", val, false
}

// GetHashed is Get for a key whose Hash is h.
func (m Map[V]) GetHashed(h uint64, key string) (V, bool) {
	if m.dir == nil {
		var zero V
		return zero, false
	}
	return m.getHashed(hash32(h), key)
}

func (m Map[V]) getHashed(h uint32, key string) (V, bool) {
	if s := m.slotOf(h, key); s != nil {
		return s.val, true
	}
	var zero V
	return zero, false
}

// slotOf returns the slot holding key, whose hash32 is h, or nil.
func (m Map[V]) slotOf(h uint32, key string) *slot[V] {
	t := m.dir.tables[m.dir.index(h)]
	if i := t.find(h, key); i >= 0 {
		return &t.slots[i]
	}
	return nil
}

// Set stores val under key, changing parts owned by e in place and copying
// the others. It returns the value it replaced, if any.
func (m *Map[V]) Set(e Epoch, key string, val V) (old V, replaced bool) {
	return m.SetHashed(e, hashOf(key), key, val)
}

// SetHashed is Set for a key whose Hash is h.
func (m *Map[V]) SetHashed(e Epoch, h uint64, key string, val V) (old V, replaced bool) {
	ref, added := m.RefHashed(e, h, key)
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
	return m.RefHashed(e, hashOf(key), key)
}

// RefHashed is Ref for a key whose Hash is h.
func (m *Map[V]) RefHashed(e Epoch, hash uint64, key string) (ref *V, added bool) {
	h := hash32(hash)
	if m.dir == nil {
		m.dir = &directory[V]{epoch: e, tables: []*table[V]{newTable[V](e, 0, minSlots)}}
	}
	for {
		ti := m.dir.index(h)
		t := m.dir.tables[ti]
		i, d, found := t.probe(h, key, true)
		if found {
			return &m.owned(e, ti).slots[i].val, false
		}
		if full(t.used, len(t.slots)) {
			m.makeRoom(e, ti)
			continue
		}
		// A copy of t has the same layout: i and d hold in it.
		t = m.owned(e, ti)
		i = t.insertAt(i, newSlot[V](h, key, d))
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
	h := hashKey(key)
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
	return m.DeleteHashed(e, hashOf(key), key)
}

// DeleteHashed is Delete for a key whose Hash is h.
func (m *Map[V]) DeleteHashed(e Epoch, hash uint64, key string) (V, bool) {
	h := hash32(hash)
	var zero V
	if m.dir == nil {
		return zero, false
	}
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
			if t.slots[i].meta() != 0 {
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
			if t.slots[i].meta() != 0 {
				dst = append(dst, t.slots[i].key())
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
			if s := &t.slots[i]; s.meta() != 0 && !fn(s.key(), s.val) {
				return false
			}
		}
		return true
	})
}

// AppendValuesOf appends the value in m of every key of keys that m holds,
// in keys' order.
func AppendValuesOf[V, W any](dst []V, m Map[V], keys Map[W]) []V {
	if m.dir == nil {
		return dst
	}
	keys.eachTable(func(t *table[W]) bool {
		for i := range t.slots {
			if t.slots[i].meta() != 0 {
				if v, ok := m.Get(t.slots[i].key()); ok {
					dst = append(dst, v)
				}
			}
		}
		return true
	})
	return dst
}
