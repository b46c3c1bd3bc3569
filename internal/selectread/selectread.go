// Package selectread prototypes issue 41's read path for compact storage
// (docs/MEMORY.md, "Issue 41: reads that decode only what they return"):
// each entry keeps its labels at write time, as an interned, shared
// LabelSet, so that a label-selector list matches before it decodes and
// decodes only what it returns; and each entry remembers the object it was
// last decoded to through a weak pointer, so that readers holding that
// object make the next read of the entry free. It is the shape the store's
// IndexSelect and ListSelect are to have, measured on its own; the store
// itself is the inner-walls refactor's.
package selectread

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"k8s.io/apimachinery/pkg/labels"
)

// LabelSet is an object's labels as the store keeps them: sorted pairs,
// shared by every entry with the same labels (a ReplicaSet's pods all have
// the same), so that an entry pays one pointer for them.
type LabelSet struct {
	keys, values []string
}

// Has reports whether the set has key.
func (s *LabelSet) Has(key string) bool {
	_, ok := s.Lookup(key)
	return ok
}

// Get returns key's value, "" if it has none.
func (s *LabelSet) Get(key string) string {
	v, _ := s.Lookup(key)
	return v
}

// Lookup returns key's value and whether the set has key.
func (s *LabelSet) Lookup(key string) (string, bool) {
	i, ok := slices.BinarySearch(s.keys, key)
	if !ok {
		return "", false
	}
	return s.values[i], true
}

// Interner hands out one LabelSet per distinct set of labels. The
// prototype never forgets a set; the store would count an entry's
// reference on write and delete.
type Interner struct {
	mu   sync.Mutex
	sets map[string]*LabelSet
}

// Intern returns the LabelSet of m.
func (in *Interner) Intern(m map[string]string) *LabelSet {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	canonical := b.String()
	in.mu.Lock()
	defer in.mu.Unlock()
	if s, ok := in.sets[canonical]; ok {
		return s
	}
	s := &LabelSet{keys: keys, values: make([]string, len(keys))}
	for i, k := range keys {
		s.values[i] = m[k]
	}
	if in.sets == nil {
		in.sets = map[string]*LabelSet{}
	}
	in.sets[canonical] = s
	return s
}

// Decoder turns an entry's stored bytes into a fresh object.
type Decoder[T any] func(data []byte) (*T, error)

// Entry is one stored object: its bytes, its labels, and the object it was
// last decoded to while someone holds it.
type Entry[T any] struct {
	data    []byte
	labels  *LabelSet
	decoded atomic.Pointer[weak.Pointer[T]]
}

// NewEntry returns the entry of data with labels.
func NewEntry[T any](data []byte, labels *LabelSet) *Entry[T] {
	return &Entry[T]{data: data, labels: labels}
}

// Labels are the entry's labels.
func (e *Entry[T]) Labels() *LabelSet { return e.labels }

// Object returns the entry's object: the one a reader still holds, if
// any, or a new decode, then remembered weakly. Readers share it, as
// client-go's readers share the cache's objects.
func (e *Entry[T]) Object(decode Decoder[T]) (*T, error) {
	if wp := e.decoded.Load(); wp != nil {
		if obj := wp.Value(); obj != nil {
			return obj, nil
		}
	}
	obj, err := decode(e.data)
	if err != nil {
		return nil, err
	}
	wp := weak.Make(obj)
	e.decoded.Store(&wp)
	return obj, nil
}

// Select calls fn with the object of each entry whose labels sel matches,
// decoding only those. It matches each distinct LabelSet once: entries
// sharing one, as a ReplicaSet's pods do, cost one match between them.
func Select[T any](entries []*Entry[T], sel labels.Selector, decode Decoder[T], fn func(*T)) error {
	everything := sel == nil || sel.Empty()
	var memo map[*LabelSet]bool
	if !everything {
		memo = make(map[*LabelSet]bool, 8)
	}
	for _, e := range entries {
		if !everything {
			ok, seen := memo[e.labels]
			if !seen {
				ok = sel.Matches(e.labels)
				memo[e.labels] = ok
			}
			if !ok {
				continue
			}
		}
		obj, err := e.Object(decode)
		if err != nil {
			return err
		}
		fn(obj)
	}
	return nil
}
