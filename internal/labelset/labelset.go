// Package labelset keeps objects' labels apart from the objects, interned,
// so that a compact store matches a label selector before it decodes: a
// Set is one object's labels, shared by every object with the same labels
// (a ReplicaSet's pods all have the same), so that an entry pays one
// pointer for them; and the Interner forgets a Set once no entry holds it.
package labelset

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"weak"

	"k8s.io/apimachinery/pkg/labels"
)

// Set is one set of labels: keys sorted, each value at its key's position.
// Keys and values are slices of one string, the set's canonical form, so a
// set is four allocations however many labels it has. A Set is never
// changed once made.
type Set struct {
	keys, values []string
	canonical    string
}

var _ labels.Labels = (*Set)(nil)

// Has reports whether the set has key.
func (s *Set) Has(key string) bool {
	_, ok := s.Lookup(key)
	return ok
}

// Get returns key's value, "" if the set has none.
func (s *Set) Get(key string) string {
	v, _ := s.Lookup(key)
	return v
}

// Lookup returns key's value and whether the set has key.
func (s *Set) Lookup(key string) (string, bool) {
	i, ok := slices.BinarySearch(s.keys, key)
	if !ok {
		return "", false
	}
	return s.values[i], true
}

// Len is the number of labels.
func (s *Set) Len() int { return len(s.keys) }

// empty is the Set of objects without labels, never forgotten.
var empty = &Set{}

// Interner hands out one Set per distinct set of labels among the sets
// still held somewhere. It forgets a set once the garbage collector has
// found nothing else holding it, so a store need not count who holds
// which. mu guards sets.
type Interner struct {
	mu   sync.Mutex
	sets map[string]weak.Pointer[Set]
}

// maxStackLabels is how many labels Intern sorts without allocating.
const maxStackLabels = 16

// Intern returns the Set of m's labels.
func (in *Interner) Intern(m map[string]string) *Set {
	if len(m) == 0 {
		return empty
	}
	var stack [maxStackLabels]string
	keys := stack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf [512]byte
	canonical := appendCanonical(buf[:0], keys, m)
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.sets[string(canonical)]; ok {
		if s := wp.Value(); s != nil {
			return s
		}
	}
	s := newSet(string(canonical), len(keys))
	if in.sets == nil {
		in.sets = map[string]weak.Pointer[Set]{}
	}
	in.sets[s.canonical] = weak.Make(s)
	runtime.AddCleanup(s, in.forget, s.canonical)
	return s
}

// appendCanonical appends the labels of m in the order of keys, each key
// and value followed by a zero byte (which neither may contain).
func appendCanonical(dst []byte, keys []string, m map[string]string) []byte {
	for _, k := range keys {
		dst = append(dst, k...)
		dst = append(dst, 0)
		dst = append(dst, m[k]...)
		dst = append(dst, 0)
	}
	return dst
}

// newSet splits canonical into n keys and values that share its bytes.
func newSet(canonical string, n int) *Set {
	s := &Set{keys: make([]string, 0, n), values: make([]string, 0, n), canonical: canonical}
	for range n {
		k, rest, _ := strings.Cut(canonical, "\x00")
		v, rest, _ := strings.Cut(rest, "\x00")
		s.keys = append(s.keys, k)
		s.values = append(s.values, v)
		canonical = rest
	}
	return s
}

// forget drops the entry of canonical once its set was collected; a set
// made since for the same labels keeps it.
func (in *Interner) forget(canonical string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if wp, ok := in.sets[canonical]; ok && wp.Value() == nil {
		delete(in.sets, canonical)
	}
}
