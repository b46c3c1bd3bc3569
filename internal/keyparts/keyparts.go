// Package keyparts is the key engine: a "namespace/name" key held as the
// two strings it joins, compared, hashed and joined without building the
// key string, and a set of key hashes.
package keyparts

import (
	"hash/maphash"
	"math/bits"
	"strings"
	"unsafe"

	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/objmeta"
)

// Parts is a key held as the two strings it joins, so that code which only
// compares or hashes keys need not build them: the key is "namespace/name",
// or name alone when namespace is empty. Any key, whatever made it, is also
// the Parts with an empty namespace (see Of); two Parts stand
// for the same key exactly when their keys are equal, not their fields.
type Parts struct {
	Namespace string
	Name      string
}

// Of holds an already built key.
func Of(key string) Parts { return Parts{Name: key} }

// Meta returns the parts of the key MetaNamespaceKeyFunc gives obj,
// with its errors, without joining them; the strings are the object's own.
func Meta(obj interface{}) (Parts, error) {
	if key, ok := obj.(clientcache.ExplicitKey); ok {
		return Of(string(key)), nil
	}
	m, err := objmeta.Accessor(obj)
	if err != nil {
		return Parts{}, err
	}
	return Parts{Namespace: m.GetNamespace(), Name: m.GetName()}, nil
}

// Key joins the parts; it allocates only when namespace is not empty.
func (p Parts) Key() string { return Join(p.Namespace, p.Name) }

// Is reports whether key is p's key, without joining the parts.
func (p Parts) Is(key string) bool {
	if p.Namespace == "" {
		return key == p.Name
	}
	n := len(p.Namespace)
	return len(key) == n+1+len(p.Name) && key[:n] == p.Namespace && key[n] == '/' && key[n+1:] == p.Name
}

// JoinBufSize bounds the keys joined on the stack; a namespace has at most
// 63 bytes, so only names longer than 64 take the allocating paths.
const JoinBufSize = 128

// JoinInto joins a key with a namespace into buf and returns it as a string
// aliasing buf, valid only while buf is and never to be kept; ok is false
// when the key is cluster-scoped or does not fit.
func (p Parts) JoinInto(buf *[JoinBufSize]byte) (key string, ok bool) {
	if p.Namespace == "" || len(p.Namespace)+1+len(p.Name) > JoinBufSize {
		return "", false
	}
	b := append(append(append(buf[:0], p.Namespace...), '/'), p.Name...)
	return unsafe.String(&b[0], len(b)), true
}

// Hash is maphash.String(seed, p.Key()), computed without building the key.
func (p Parts) Hash(seed maphash.Seed) uint64 {
	if p.Namespace == "" {
		return maphash.String(seed, p.Name)
	}
	var buf [JoinBufSize]byte
	if key, ok := p.JoinInto(&buf); ok {
		// One hash over the joined bytes is faster than a streaming Hash,
		// and equal to it.
		return maphash.String(seed, key)
	}
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(p.Namespace)
	h.WriteByte('/')
	h.WriteString(p.Name)
	return h.Sum64()
}

// Compare orders p and q as strings.Compare orders their keys, without
// building them.
func (p Parts) Compare(q Parts) int {
	a, an := p.segments()
	b, bn := q.segments()
	return compareJoined(a[:an], b[:bn])
}

// segments returns the strings the key concatenates and how many there are.
func (p Parts) segments() ([3]string, int) {
	if p.Namespace == "" {
		return [3]string{p.Name}, 1
	}
	return [3]string{p.Namespace, "/", p.Name}, 3
}

// compareJoined compares the concatenations of a and b.
func compareJoined(a, b []string) int {
	ai, ao, bi, bo := 0, 0, 0, 0
	for {
		for ai < len(a) && ao == len(a[ai]) {
			ai, ao = ai+1, 0
		}
		for bi < len(b) && bo == len(b[bi]) {
			bi, bo = bi+1, 0
		}
		switch {
		case ai == len(a) && bi == len(b):
			return 0
		case ai == len(a):
			return -1
		case bi == len(b):
			return 1
		}
		n := min(len(a[ai])-ao, len(b[bi])-bo)
		if c := strings.Compare(a[ai][ao:ao+n], b[bi][bo:bo+n]); c != 0 {
			return c
		}
		ao, bo = ao+n, bo+n
	}
}

// Join is the inverse of SplitMetaNamespaceKey for well-formed parts.
func Join(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// HashSet is a set of hashes in an open-addressing table, emptied and sized
// for each batch. Zero marks an empty slot, so a hash of 0 is kept as 1: two
// keys that differ only there collide, which is allowed of any hash.
type HashSet struct{ slots []uint64 }

// Reset empties the set and makes room for n hashes at most half full.
func (s *HashSet) Reset(n int) {
	size := 1 << bits.Len(uint(2*n-1))
	if cap(s.slots) < size {
		s.slots = make([]uint64, size)
		return
	}
	s.slots = s.slots[:size]
	clear(s.slots)
}

// Add inserts h and reports whether it was absent.
func (s *HashSet) Add(h uint64) bool {
	h = max(h, 1)
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = h
			return true
		case h:
			return false
		}
	}
}
