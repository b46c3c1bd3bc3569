package form

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/labelset"
	"github.com/openinformer/cache/internal/objmeta"
)

// heldLabels keeps the labels of each key's encoding, so that a label
// selector is matched before anything is decoded: they are taken from the
// caller's object when it is held, or from the object a read decodes.
// An entry is valid for the very encoding it was made for (its identity,
// as the hot cache's entries are), so a hold racing a delete's drop, or an
// encoding adopted from a restart snapshot, reads as unknown, never wrong.
// An entry keeps its encoding alive until it is replaced or dropped, so
// that the identity is never reused meanwhile.
//
// It is spread over shards, each with its own lock, as readers of many
// keys run beside the writer.
//
// The entries also count the encodings' bytes, so that a memory budget
// knows what the form holds without walking it.
type heldLabels struct {
	seed     maphash.Seed
	interner labelset.Interner
	shards   [labelShards]labelShard
	// bytes is the sum of the entries' sizes, entries their number.
	bytes, entries atomic.Int64
}

const labelShards = 16

// labelShard is one shard of heldLabels; mu guards byKey.
type labelShard struct {
	mu    sync.Mutex
	byKey map[string]labelEntry
}

// labelEntry is the labels of one encoding: nil for an encoding adopted
// without them (a restart snapshot's), whose bytes are counted all the
// same. touched is the cold tier's reference bit: set by every write and
// kept read of the key, cleared by each sweep (untouch), so that an entry
// found untouched has not been used for a whole sweep period. size is the
// encoding's length and cold whether it is compressed, so that a sweep
// decides about most keys without reading their encodings.
type labelEntry struct {
	identity *byte
	set      *labelset.Set
	size     uint32
	touched  bool
	cold     bool
}

// entryOf is the entry of e with labels set.
func entryOf(e compact.Encoding, set *labelset.Set, touched bool) labelEntry {
	return labelEntry{identity: identity(e), set: set, size: uint32(e.Len()), touched: touched, cold: e.Compressed()}
}

// store sets key's entry in s, whose lock the caller holds, and counts
// the change of bytes.
func (h *heldLabels) store(s *labelShard, key string, entry labelEntry) {
	old, ok := s.byKey[key]
	s.byKey[key] = entry
	h.bytes.Add(int64(entry.size) - int64(old.size))
	if !ok {
		h.entries.Add(1)
	}
}

// remove deletes key's entry from s, whose lock the caller holds.
func (h *heldLabels) remove(s *labelShard, key string) {
	if old, ok := s.byKey[key]; ok {
		delete(s.byKey, key)
		h.bytes.Add(-int64(old.size))
		h.entries.Add(-1)
	}
}

// counted is the bytes of the encodings with an entry, and their number.
func (h *heldLabels) counted() (bytes, entries int64) {
	return h.bytes.Load(), h.entries.Load()
}

func newHeldLabels() *heldLabels {
	h := &heldLabels{seed: maphash.MakeSeed()}
	for i := range h.shards {
		h.shards[i].byKey = map[string]labelEntry{}
	}
	return h
}

func (h *heldLabels) shard(key string) *labelShard {
	return &h.shards[maphash.String(h.seed, key)%labelShards]
}

// identity is what tells e apart from every other live encoding.
func identity(e compact.Encoding) *byte { return unsafe.SliceData(e.Identity()) }

// put records the labels of obj, the object e encodes; objects without
// metadata of their own have none to record.
func (h *heldLabels) put(key string, e compact.Encoding, obj any) {
	m, ok := objmeta.Of(obj)
	if !ok {
		return
	}
	set := h.interner.Intern(m.GetLabels())
	s := h.shard(key)
	s.mu.Lock()
	h.store(s, key, entryOf(e, set, true))
	s.mu.Unlock()
}

// offer is put for a key without labels known: a read records what no
// write has. A key's entry for another encoding stays, as the encoding
// read may be the one a write is replacing (an update's old object); an
// adopted entry for e keeps its reference bit.
func (h *heldLabels) offer(key string, e compact.Encoding, obj any) {
	s := h.shard(key)
	s.mu.Lock()
	entry, ok := s.byKey[key]
	if ok && (entry.set != nil || entry.identity != identity(e)) {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	m, isObj := objmeta.Of(obj)
	if !isObj {
		return
	}
	set := h.interner.Intern(m.GetLabels())
	s.mu.Lock()
	if cur, ok := s.byKey[key]; !ok || (cur.set == nil && cur.identity == identity(e)) {
		h.store(s, key, entryOf(e, set, cur.touched || !ok))
	}
	s.mu.Unlock()
}

// adopt keeps key's entry only if it is e's: e was held elsewhere (a
// watch-list's buffer, which recorded its labels, or a restart snapshot,
// which did not), and an entry for another encoding would keep a read
// from learning e's. An entry without labels then counts e's bytes.
func (h *heldLabels) adopt(key string, e compact.Encoding) {
	s := h.shard(key)
	s.mu.Lock()
	if entry, ok := s.byKey[key]; !ok || entry.identity != identity(e) {
		h.store(s, key, entryOf(e, nil, true))
	}
	s.mu.Unlock()
}

// touch marks key's entry, if it is e's, as used since the last sweep.
func (h *heldLabels) touch(key string, e compact.Encoding) {
	s := h.shard(key)
	s.mu.Lock()
	if entry, ok := s.byKey[key]; ok && entry.identity == identity(e) && !entry.touched {
		entry.touched = true
		s.byKey[key] = entry
	}
	s.mu.Unlock()
}

// untouch clears key's mark and returns e's entry as it was, false when
// key has none for e.
func (h *heldLabels) untouch(key string, e compact.Encoding) (labelEntry, bool) {
	s := h.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	entry, ok := s.byKey[key]
	if !ok || entry.identity != identity(e) {
		return labelEntry{}, false
	}
	if entry.touched {
		cleared := entry
		cleared.touched = false
		s.byKey[key] = cleared
	}
	return entry, true
}

// rekey moves key's entry from e to next, the same object in another
// tier, so that its labels stay known; an entry for another encoding stays.
func (h *heldLabels) rekey(key string, e, next compact.Encoding) {
	s := h.shard(key)
	s.mu.Lock()
	if entry, ok := s.byKey[key]; ok && entry.identity == identity(e) {
		h.store(s, key, entryOf(next, entry.set, entry.touched))
	}
	s.mu.Unlock()
}

// get returns the labels of e, held under key, if known.
func (h *heldLabels) get(key string, e compact.Encoding) (*labelset.Set, bool) {
	s := h.shard(key)
	s.mu.Lock()
	entry, ok := s.byKey[key]
	s.mu.Unlock()
	if !ok || entry.identity != identity(e) || entry.set == nil {
		return nil, false
	}
	return entry.set, true
}

// drop forgets key's labels.
func (h *heldLabels) drop(key string) {
	s := h.shard(key)
	s.mu.Lock()
	h.remove(s, key)
	s.mu.Unlock()
}
