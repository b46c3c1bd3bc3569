package cache

import (
	"hash/maphash"
	"strings"
	"unsafe"
)

// The key engine: a key as its namespace and name, compared, hashed and
// joined without building the key string.

// keyParts is a key held as the two strings it joins, so that code which only
// compares or hashes keys need not build them: the key is "namespace/name",
// or name alone when namespace is empty. Any key, whatever made it, is also
// the keyParts with an empty namespace (see partsOfKey); two keyParts stand
// for the same key exactly when their keys are equal, not their fields.
type keyParts struct {
	namespace string
	name      string
}

// partsOfKey holds an already built key.
func partsOfKey(key string) keyParts { return keyParts{name: key} }

// metaKeyParts returns the parts of the key MetaNamespaceKeyFunc gives obj,
// with its errors, without joining them; the strings are the object's own.
func metaKeyParts(obj interface{}) (keyParts, error) {
	if key, ok := obj.(ExplicitKey); ok {
		return partsOfKey(string(key)), nil
	}
	m, err := accessor(obj)
	if err != nil {
		return keyParts{}, err
	}
	return keyParts{namespace: m.GetNamespace(), name: m.GetName()}, nil
}

// key joins the parts; it allocates only when namespace is not empty.
func (p keyParts) key() string { return joinKey(p.namespace, p.name) }

// is reports whether key is p's key, without joining the parts.
func (p keyParts) is(key string) bool {
	if p.namespace == "" {
		return key == p.name
	}
	n := len(p.namespace)
	return len(key) == n+1+len(p.name) && key[:n] == p.namespace && key[n] == '/' && key[n+1:] == p.name
}

// joinBufSize bounds the keys joined on the stack; a namespace has at most
// 63 bytes, so only names longer than 64 take the allocating paths.
const joinBufSize = 128

// joinInto joins a key with a namespace into buf and returns it as a string
// aliasing buf, valid only while buf is and never to be kept; ok is false
// when the key is cluster-scoped or does not fit.
func (p keyParts) joinInto(buf *[joinBufSize]byte) (key string, ok bool) {
	if p.namespace == "" || len(p.namespace)+1+len(p.name) > joinBufSize {
		return "", false
	}
	b := append(append(append(buf[:0], p.namespace...), '/'), p.name...)
	return unsafe.String(&b[0], len(b)), true
}

// hash is maphash.String(seed, p.key()), computed without building the key.
func (p keyParts) hash(seed maphash.Seed) uint64 {
	if p.namespace == "" {
		return maphash.String(seed, p.name)
	}
	var buf [joinBufSize]byte
	if key, ok := p.joinInto(&buf); ok {
		// One hash over the joined bytes is faster than a streaming Hash,
		// and equal to it.
		return maphash.String(seed, key)
	}
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(p.namespace)
	h.WriteByte('/')
	h.WriteString(p.name)
	return h.Sum64()
}

// compare orders p and q as strings.Compare orders their keys, without
// building them.
func (p keyParts) compare(q keyParts) int {
	a, an := p.segments()
	b, bn := q.segments()
	return compareJoined(a[:an], b[:bn])
}

// segments returns the strings the key concatenates and how many there are.
func (p keyParts) segments() ([3]string, int) {
	if p.namespace == "" {
		return [3]string{p.name}, 1
	}
	return [3]string{p.namespace, "/", p.name}, 3
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
