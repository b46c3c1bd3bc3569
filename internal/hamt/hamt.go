// Package hamt is a persistent (immutable, structurally shared) hash map
// from string keys to values, built as a compressed hash array mapped trie
// with separate bitmaps for inline entries and subtries (CHAMP).
//
// A Map value is a snapshot: copying it is O(1) and the copy never changes.
// Writes go through an Epoch, the identity of one writer's editing session:
// nodes created in the current epoch belong to that writer and are changed
// in place, all others are copied first. A writer that hands a snapshot to a
// reader must move to a fresh epoch (NewEpoch) before its next write, so that
// nothing the reader can see is ever changed again. This "transient" scheme
// makes a run of writes with no reader in between as cheap as a mutable map.
package hamt

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

const (
	bitsPerLevel = 5
	fanoutMask   = 1<<bitsPerLevel - 1
	// hashBits is the width of the hash; below this depth keys whose hashes
	// are equal share one collision node.
	hashBits = 64
)

// Epoch identifies one editing session. Nodes stamped with the writer's
// current Epoch may be changed in place; the zero Epoch owns nothing.
type Epoch uint64

var lastEpoch atomic.Uint64

// NewEpoch returns an Epoch never returned before in this process.
func NewEpoch() Epoch {
	return Epoch(lastEpoch.Add(1))
}

var seed = maphash.MakeSeed()

// hashKey hashes a key. It is a variable so tests can force collisions.
var hashKey = func(key string) uint64 {
	return maphash.String(seed, key)
}

// Map is a persistent map from string to V. The zero value is an empty map.
type Map[V any] struct {
	root *node[V]
	size int
}

type entry[V any] struct {
	key string
	val V
}

// inlineEntries is how many entries a node stores in its own allocation.
// Most leaves of a large trie hold a few entries, so keeping them next to
// the node header halves the allocations and the cache misses of a walk.
const inlineEntries = 4

// node holds its entries and its subtries in two arrays ordered by hash
// fragment. A node at or below hashBits depth is a collision node: its
// entries are unordered and it has no subtries. entries points into inline
// until it outgrows it.
type node[V any] struct {
	dataMap uint32
	nodeMap uint32
	epoch   Epoch
	entries []entry[V]
	kids    []*node[V]
	inline  [inlineEntries]entry[V]
}

// newNode returns an empty node owned by e whose entries use inline.
func newNode[V any](e Epoch) *node[V] {
	n := &node[V]{epoch: e}
	n.entries = n.inline[:0]
	return n
}

// Len returns the number of keys.
func (m Map[V]) Len() int { return m.size }

// Get returns the value stored under key.
func (m Map[V]) Get(key string) (V, bool) {
	n := m.root
	if n == nil {
		var zero V
		return zero, false
	}
	h := hashKey(key)
	for shift := uint(0); ; shift += bitsPerLevel {
		if shift >= hashBits {
			return n.findCollision(key)
		}
		bit := uint32(1) << ((h >> shift) & fanoutMask)
		switch {
		case n.dataMap&bit != 0:
			e := &n.entries[index(n.dataMap, bit)]
			if e.key == key {
				return e.val, true
			}
			var zero V
			return zero, false
		case n.nodeMap&bit != 0:
			n = n.kids[index(n.nodeMap, bit)]
		default:
			var zero V
			return zero, false
		}
	}
}

func (n *node[V]) findCollision(key string) (V, bool) {
	for i := range n.entries {
		if n.entries[i].key == key {
			return n.entries[i].val, true
		}
	}
	var zero V
	return zero, false
}

// index is the position of bit's slot among the slots set in bitmap.
func index(bitmap, bit uint32) int {
	return bits.OnesCount32(bitmap & (bit - 1))
}

// Set stores val under key, changing nodes owned by e in place and copying
// the others. It returns the value it replaced, if any.
func (m *Map[V]) Set(e Epoch, key string, val V) (old V, replaced bool) {
	if m.root == nil {
		m.root = newNode[V](e)
	}
	m.root, old, replaced = m.root.set(e, hashKey(key), 0, key, val)
	if !replaced {
		m.size++
	}
	return old, replaced
}

// owned returns n itself if e owns it, else a copy owned by e.
func (n *node[V]) owned(e Epoch) *node[V] {
	if n.epoch == e {
		return n
	}
	c := newNode[V](e)
	c.dataMap, c.nodeMap = n.dataMap, n.nodeMap
	if len(n.entries) <= inlineEntries {
		c.entries = append(c.entries, n.entries...)
	} else {
		c.entries = append([]entry[V](nil), n.entries...)
	}
	if len(n.kids) > 0 {
		c.kids = append([]*node[V](nil), n.kids...)
	}
	return c
}

func (n *node[V]) set(e Epoch, h uint64, shift uint, key string, val V) (*node[V], V, bool) {
	var zero V
	if shift >= hashBits {
		return n.setCollision(e, key, val)
	}
	bit := uint32(1) << ((h >> shift) & fanoutMask)
	switch {
	case n.dataMap&bit != 0:
		i := index(n.dataMap, bit)
		if n.entries[i].key == key {
			n = n.owned(e)
			old := n.entries[i].val
			n.entries[i].val = val
			return n, old, true
		}
		old := n.entries[i]
		sub := pair(e, hashKey(old.key), old, h, entry[V]{key, val}, shift+bitsPerLevel)
		n = n.owned(e)
		n.entries = remove(n.entries, i)
		n.dataMap ^= bit
		n.kids = insert(n.kids, index(n.nodeMap, bit), sub)
		n.nodeMap |= bit
		return n, zero, false
	case n.nodeMap&bit != 0:
		i := index(n.nodeMap, bit)
		kid, old, replaced := n.kids[i].set(e, h, shift+bitsPerLevel, key, val)
		if kid != n.kids[i] {
			n = n.owned(e)
			n.kids[i] = kid
		}
		return n, old, replaced
	default:
		n = n.owned(e)
		n.entries = insert(n.entries, index(n.dataMap, bit), entry[V]{key, val})
		n.dataMap |= bit
		return n, zero, false
	}
}

func (n *node[V]) setCollision(e Epoch, key string, val V) (*node[V], V, bool) {
	for i := range n.entries {
		if n.entries[i].key == key {
			n = n.owned(e)
			old := n.entries[i].val
			n.entries[i].val = val
			return n, old, true
		}
	}
	n = n.owned(e)
	n.entries = append(n.entries, entry[V]{key, val})
	var zero V
	return n, zero, false
}

// pair builds the smallest subtrie at shift holding two distinct keys.
func pair[V any](e Epoch, h1 uint64, e1 entry[V], h2 uint64, e2 entry[V], shift uint) *node[V] {
	n := newNode[V](e)
	if shift >= hashBits {
		n.entries = append(n.entries, e1, e2)
		return n
	}
	f1, f2 := (h1>>shift)&fanoutMask, (h2>>shift)&fanoutMask
	if f1 == f2 {
		n.nodeMap = 1 << f1
		n.kids = []*node[V]{pair(e, h1, e1, h2, e2, shift+bitsPerLevel)}
		return n
	}
	n.dataMap = 1<<f1 | 1<<f2
	if f1 < f2 {
		n.entries = append(n.entries, e1, e2)
	} else {
		n.entries = append(n.entries, e2, e1)
	}
	return n
}

// Delete removes key, changing nodes owned by e in place and copying the
// others. It returns the removed value.
func (m *Map[V]) Delete(e Epoch, key string) (V, bool) {
	if m.root == nil {
		var zero V
		return zero, false
	}
	root, old, ok := m.root.del(e, hashKey(key), 0, key)
	if ok {
		m.root = root
		m.size--
	}
	return old, ok
}

func (n *node[V]) del(e Epoch, h uint64, shift uint, key string) (*node[V], V, bool) {
	var zero V
	if shift >= hashBits {
		for i := range n.entries {
			if n.entries[i].key == key {
				old := n.entries[i].val
				n = n.owned(e)
				n.entries = remove(n.entries, i)
				return n, old, true
			}
		}
		return n, zero, false
	}
	bit := uint32(1) << ((h >> shift) & fanoutMask)
	switch {
	case n.dataMap&bit != 0:
		i := index(n.dataMap, bit)
		if n.entries[i].key != key {
			return n, zero, false
		}
		old := n.entries[i].val
		n = n.owned(e)
		n.entries = remove(n.entries, i)
		n.dataMap ^= bit
		return n, old, true
	case n.nodeMap&bit != 0:
		i := index(n.nodeMap, bit)
		kid, old, ok := n.kids[i].del(e, h, shift+bitsPerLevel, key)
		if !ok {
			return n, zero, false
		}
		n = n.owned(e)
		if len(kid.kids) == 0 && len(kid.entries) == 1 {
			// Keep the trie canonical: a lone entry lives in its parent.
			n.kids = remove(n.kids, i)
			n.nodeMap ^= bit
			n.entries = insert(n.entries, index(n.dataMap, bit), kid.entries[0])
			n.dataMap |= bit
		} else {
			n.kids[i] = kid
		}
		return n, old, true
	default:
		return n, zero, false
	}
}

// insert puts v at position i, reusing spare capacity of s. Only call it on
// slices of nodes the caller owns.
func insert[T any](s []T, i int, v T) []T {
	var zero T
	s = append(s, zero)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

// remove deletes position i in place. Only call it on slices of nodes the
// caller owns.
func remove[T any](s []T, i int) []T {
	copy(s[i:], s[i+1:])
	var zero T
	s[len(s)-1] = zero
	return s[:len(s)-1]
}

// AppendValues appends every value to dst, in unspecified order.
func (m Map[V]) AppendValues(dst []V) []V {
	if m.root == nil {
		return dst
	}
	return m.root.appendValues(dst)
}

func (n *node[V]) appendValues(dst []V) []V {
	for i := range n.entries {
		dst = append(dst, n.entries[i].val)
	}
	for _, k := range n.kids {
		dst = k.appendValues(dst)
	}
	return dst
}

// AppendKeys appends every key to dst, in unspecified order.
func (m Map[V]) AppendKeys(dst []string) []string {
	if m.root == nil {
		return dst
	}
	return m.root.appendKeys(dst)
}

func (n *node[V]) appendKeys(dst []string) []string {
	for i := range n.entries {
		dst = append(dst, n.entries[i].key)
	}
	for _, k := range n.kids {
		dst = k.appendKeys(dst)
	}
	return dst
}

// Range calls fn for every key and value, in unspecified order, until fn
// returns false.
func (m Map[V]) Range(fn func(key string, val V) bool) {
	if m.root != nil {
		m.root.rangeAll(fn)
	}
}

func (n *node[V]) rangeAll(fn func(string, V) bool) bool {
	for i := range n.entries {
		if !fn(n.entries[i].key, n.entries[i].val) {
			return false
		}
	}
	for _, k := range n.kids {
		if !k.rangeAll(fn) {
			return false
		}
	}
	return true
}
