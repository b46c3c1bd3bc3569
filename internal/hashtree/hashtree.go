// Package hashtree is a persistent (immutable, structurally shared) map from
// string keys to values: a B+tree ordered by the keys' 64-bit hashes.
//
// Ordering by hash rather than by key keeps every comparison on the search
// path an integer comparison on a contiguous array (a string is compared
// only when two hashes are equal), and wide leaves keep a full walk
// sequential in memory and the number of nodes small.
//
// A Map value is a snapshot: copying it is O(1) and the copy never changes.
// Writes go through an Epoch, the identity of one writer's editing session:
// nodes created in the current epoch belong to that writer and are changed
// in place, all others are copied first. A writer that hands a snapshot to a
// reader must move to a fresh epoch (NewEpoch) before its next write, so that
// nothing the reader can see is ever changed again. This "transient" scheme
// makes a run of writes with no reader in between as cheap as a mutable map.
package hashtree

import (
	"hash/maphash"
	"slices"
	"sync/atomic"
)

const (
	// maxEntries is the most entries a leaf holds; a full one splits
	// before it takes another.
	maxEntries = 64
	// maxChildren is the most children a branch holds; likewise.
	maxChildren = 64
	// A node with fewer than a quarter of its maximum is merged with a
	// neighbour when the two fit in one node.
	minEntries  = maxEntries / 4
	minChildren = maxChildren / 4
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

// pos is a place in the tree's order: by hash, then by key.
type pos struct {
	hash uint64
	key  string
}

func (p pos) less(q pos) bool {
	return p.hash < q.hash || (p.hash == q.hash && p.key < q.key)
}

type entry[V any] struct {
	pos
	val V
}

// child is a branch's subtree with a lower bound of its keys. The bounds of
// children after the first separate them; the first child's is unused.
type child[V any] struct {
	low pos
	n   *node[V]
}

// node is a leaf (entries) or a branch (children).
type node[V any] struct {
	epoch    Epoch
	entries  []entry[V]
	children []child[V]
}

func (n *node[V]) isLeaf() bool { return n.children == nil }

// owned returns n itself if e owns it, else a copy owned by e.
func (n *node[V]) owned(e Epoch) *node[V] {
	if n.epoch == e {
		return n
	}
	c := &node[V]{epoch: e}
	if n.isLeaf() {
		c.entries = slices.Clone(n.entries)
	} else {
		c.children = slices.Clone(n.children)
	}
	return c
}

// childIndex is the index of the child whose range holds p.
func (n *node[V]) childIndex(p pos) int {
	c := n.children
	// Hashes are uniform, so interpolation lands next to the answer; the
	// scans fix the guess up, and a skewed hash only makes them longer.
	i := guess(p.hash, c[0].low.hash, c[len(c)-1].low.hash, len(c))
	if i == 0 {
		i = 1
	}
	for i > 1 && p.less(c[i-1].low) {
		i--
	}
	for i < len(c) && !p.less(c[i].low) {
		i++
	}
	return i - 1
}

// entryIndex is the index of the first entry not below p.
func (n *node[V]) entryIndex(p pos) int {
	es := n.entries
	if len(es) == 0 {
		return 0
	}
	i := guess(p.hash, es[0].hash, es[len(es)-1].hash, len(es))
	for i > 0 && !es[i-1].less(p) {
		i--
	}
	for i < len(es) && es[i].less(p) {
		i++
	}
	return i
}

// guess interpolates where h falls among n sorted hashes from lo to hi.
func guess(h, lo, hi uint64, n int) int {
	switch {
	case h <= lo:
		return 0
	case h >= hi:
		return n - 1
	}
	return int(float64(h-lo) / float64(hi-lo) * float64(n-1))
}

// Map is a persistent map from string to V. The zero value is an empty map.
type Map[V any] struct {
	root *node[V]
	size int
}

// Len returns the number of keys.
func (m Map[V]) Len() int { return m.size }

// Get returns the value stored under key.
func (m Map[V]) Get(key string) (V, bool) {
	var zero V
	n := m.root
	if n == nil {
		return zero, false
	}
	p := pos{hashKey(key), key}
	for !n.isLeaf() {
		n = n.children[n.childIndex(p)].n
	}
	i := n.entryIndex(p)
	if i < len(n.entries) && n.entries[i].pos == p {
		return n.entries[i].val, true
	}
	return zero, false
}

// Set stores val under key, changing nodes owned by e in place and copying
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
// may change it in place, adding key with the zero value if absent. Nodes
// on the way are made e's as by Set. The pointer is valid until the next
// write to m.
func (m *Map[V]) Ref(e Epoch, key string) (ref *V, added bool) {
	return m.ref(e, key, true)
}

// Existing is Ref for a key that is present; for an absent key it returns
// nil and changes nothing.
func (m *Map[V]) Existing(e Epoch, key string) *V {
	ref, _ := m.ref(e, key, false)
	return ref
}

func (m *Map[V]) ref(e Epoch, key string, create bool) (*V, bool) {
	if m.root == nil {
		if !create {
			return nil, false
		}
		m.root = &node[V]{epoch: e, entries: make([]entry[V], 0, 1)}
	}
	root, right, low, ref, added := m.root.ref(e, pos{hashKey(key), key}, create)
	if ref == nil {
		return nil, false
	}
	m.root = root
	if right != nil {
		m.root = &node[V]{epoch: e, children: []child[V]{{n: root}, {low: low, n: right}}}
	}
	if added {
		m.size++
	}
	return ref, added
}

// ref finds or, if create, adds the entry at p below n. If the node
// overflowed it returns the split-off right half and its lower bound too.
// When p is absent and not to be created, nothing is copied and ref is nil.
func (n *node[V]) ref(e Epoch, p pos, create bool) (_, right *node[V], low pos, ref *V, added bool) {
	if n.isLeaf() {
		i := n.entryIndex(p)
		found := i < len(n.entries) && n.entries[i].pos == p
		if !found && !create {
			return n, nil, pos{}, nil, false
		}
		n = n.owned(e)
		if found {
			return n, nil, pos{}, &n.entries[i].val, false
		}
		// Split a full leaf before inserting, so no array outgrows a node.
		target, j := n, i
		if len(n.entries) == maxEntries {
			right, low = n.splitLeaf(e)
			if !p.less(low) {
				target, j = right, i-len(n.entries)
			}
		}
		target.entries = insertAt(target.entries, j, entry[V]{pos: p}, maxEntries)
		return n, right, low, &target.entries[j].val, true
	}
	i := n.childIndex(p)
	kid, kidRight, kidLow, ref, added := n.children[i].n.ref(e, p, create)
	if ref == nil {
		return n, nil, pos{}, nil, false
	}
	if kid != n.children[i].n || kidRight != nil {
		n = n.owned(e)
		n.children[i].n = kid
	}
	if kidRight != nil {
		target, j := n, i+1
		if len(n.children) == maxChildren {
			right, low = n.splitBranch(e)
			// Appending to the left half keeps the right half's bound.
			if j > len(n.children) {
				target, j = right, j-len(n.children)
			}
		}
		target.children = insertAt(target.children, j, child[V]{kidLow, kidRight}, maxChildren)
	}
	return n, right, low, ref, added
}

// appendAll appends more to s; the result is at most limit long, and so is
// any array it allocates.
func appendAll[T any](s, more []T, limit int) []T {
	if len(s)+len(more) > cap(s) {
		grown := make([]T, len(s), limit)
		copy(grown, s)
		s = grown
	}
	return append(s, more...)
}

// insertAt puts v at position i of s, which is shorter than limit, growing
// its array by doubling but never past limit.
func insertAt[T any](s []T, i int, v T, limit int) []T {
	if len(s) == cap(s) {
		grown := make([]T, len(s), min(max(2*len(s), 4), limit))
		copy(grown, s)
		s = grown
	}
	s = s[:len(s)+1]
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

func (n *node[V]) splitLeaf(e Epoch) (*node[V], pos) {
	half := len(n.entries) / 2
	right := &node[V]{epoch: e, entries: make([]entry[V], len(n.entries)-half, maxEntries)}
	copy(right.entries, n.entries[half:])
	clear(n.entries[half:])
	n.entries = n.entries[:half]
	return right, right.entries[0].pos
}

func (n *node[V]) splitBranch(e Epoch) (*node[V], pos) {
	half := len(n.children) / 2
	right := &node[V]{epoch: e, children: make([]child[V], len(n.children)-half, maxChildren)}
	copy(right.children, n.children[half:])
	clear(n.children[half:])
	n.children = n.children[:half]
	return right, right.children[0].low
}

// Delete removes key, changing nodes owned by e in place and copying the
// others. It returns the removed value.
func (m *Map[V]) Delete(e Epoch, key string) (V, bool) {
	var zero V
	if m.root == nil {
		return zero, false
	}
	root, old, ok := m.root.del(e, pos{hashKey(key), key})
	if !ok {
		return zero, false
	}
	m.size--
	for !root.isLeaf() && len(root.children) == 1 {
		root = root.children[0].n
	}
	if root.size() == 0 {
		root = nil
	}
	m.root = root
	return old, true
}

func (n *node[V]) del(e Epoch, p pos) (*node[V], V, bool) {
	var zero V
	if n.isLeaf() {
		i := n.entryIndex(p)
		if i == len(n.entries) || n.entries[i].pos != p {
			return n, zero, false
		}
		old := n.entries[i].val
		n = n.owned(e)
		n.entries = slices.Delete(n.entries, i, i+1)
		return n, old, true
	}
	i := n.childIndex(p)
	kid, old, ok := n.children[i].n.del(e, p)
	if !ok {
		return n, zero, false
	}
	n = n.owned(e)
	n.children[i].n = kid
	n.rebalance(e, i)
	return n, old, true
}

// rebalance drops child i if it emptied, or merges it with a neighbour if
// it became small and the two fit in one node.
func (n *node[V]) rebalance(e Epoch, i int) {
	kid := n.children[i].n
	if kid.size() == 0 {
		n.children = slices.Delete(n.children, i, i+1)
		return
	}
	if kid.size() >= kid.minSize() || len(n.children) < 2 {
		return
	}
	left := i
	if i == len(n.children)-1 {
		left = i - 1
	}
	a, b := n.children[left].n, n.children[left+1].n
	if a.size()+b.size() > a.maxSize() {
		return
	}
	merged := a.owned(e)
	if merged.isLeaf() {
		merged.entries = appendAll(merged.entries, b.entries, maxEntries)
	} else {
		first := len(merged.children)
		merged.children = appendAll(merged.children, b.children, maxChildren)
		merged.children[first].low = n.children[left+1].low
	}
	n.children[left].n = merged
	n.children = slices.Delete(n.children, left+1, left+2)
}

func (n *node[V]) size() int {
	if n.isLeaf() {
		return len(n.entries)
	}
	return len(n.children)
}

func (n *node[V]) minSize() int {
	if n.isLeaf() {
		return minEntries
	}
	return minChildren
}

func (n *node[V]) maxSize() int {
	if n.isLeaf() {
		return maxEntries
	}
	return maxChildren
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
	for _, c := range n.children {
		dst = c.n.appendValues(dst)
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
	for _, c := range n.children {
		dst = c.n.appendKeys(dst)
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
	for _, c := range n.children {
		if !c.n.rangeAll(fn) {
			return false
		}
	}
	return true
}
