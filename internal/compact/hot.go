package compact

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"unsafe"
)

// HotCache keeps recently decoded objects of up to a fixed number of keys,
// so that repeated reads of the same hot objects skip decoding. Entries are
// keyed by the store's key and valid only for the very bytes they were
// decoded from: a Get with other bytes (the object was updated since)
// misses, so an entry can never be stale. Each entry holds its bytes, which
// keeps their address from being reused while the entry exists.
//
// A key keeps the object it held before its last Put as well, because a
// store that writes a new version still needs the old one: to move the key
// in its indexes and to hand handlers the old object of an update. The
// write reads it once, through TakeOld, either before its Put (an
// informer's write looks its key up first) or after it; either way the
// cache then holds one version of the key again, not two, which a memory
// budget that counts one decoded object per hot key relies on.
//
// Readers share the lock of one of several shards and do not write to shared
// memory beyond an atomic "recently used" bit, so concurrent reads of hot
// objects do not serialize. Eviction is CLOCK (second chance): an entry read
// since the hand last passed survives one more round. An evicted entry is
// remembered weakly and found again while its object is alive (ghost.go).
// Every object returned is shared by all readers and must not be mutated,
// as with any cache read.
type HotCache[V any] struct {
	seed   maphash.Seed
	shards []hotShard[V]
}

type hotShard[V any] struct {
	mu    sync.RWMutex
	index map[string]int
	// slots grow to limit, then entries are replaced in place.
	slots []hotSlot[V]
	limit int
	// hand is the next slot the clock looks at when the shard is full.
	hand int
	// ghosts are the entries evicted last, held weakly (ghost.go).
	ghosts ghostRing
}

type hotSlot[V any] struct {
	key string
	cur hotVersion[V]
	// prev is what cur was before the key's last Put, if it was live.
	prev hotVersion[V]
	// taken is set when cur was read as an old object (TakeOld): its
	// write has what it needs, so the next Put does not keep it as prev.
	taken bool
	live  bool
	used  atomic.Bool
}

// hotVersion is an object and the bytes it was decoded from.
type hotVersion[V any] struct {
	data  []byte
	value V
}

// shardedFrom is the capacity from which a HotCache spreads its entries over
// hotShards shards: below it one lock is cheaper than the hashing.
const (
	shardedFrom = 1024
	hotShards   = 16
)

// NewHotCache returns a HotCache for at most capacity entries (rounded up to
// a multiple of 16 from 1024 on). A capacity below 1 is 1.
func NewHotCache[V any](capacity int) *HotCache[V] {
	capacity = max(capacity, 1)
	n := 1
	if capacity >= shardedFrom {
		n = hotShards
	}
	per := (capacity + n - 1) / n
	h := &HotCache[V]{seed: maphash.MakeSeed(), shards: make([]hotShard[V], n)}
	for i := range h.shards {
		h.shards[i].index = map[string]int{}
		h.shards[i].ghosts = ghostRing{byKey: map[string]ghost{}, limit: per * ghostsPerSlot}
		h.shards[i].limit = per
	}
	return h
}

func (h *HotCache[V]) shard(key string) *hotShard[V] {
	if len(h.shards) == 1 {
		return &h.shards[0]
	}
	return &h.shards[maphash.String(h.seed, key)%uint64(len(h.shards))]
}

// sameBytes reports whether a and b are the same stored bytes, not merely
// equal ones.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// Get returns the object decoded from data under key, if it is still cached.
// data must be the store's own, never modified, non-empty bytes.
func (h *HotCache[V]) Get(key string, data []byte) (V, bool) {
	s := h.shard(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i, ok := s.index[key]; ok {
		slot := &s.slots[i]
		for _, v := range [2]*hotVersion[V]{&slot.cur, &slot.prev} {
			if sameBytes(v.data, data) {
				slot.used.Store(true)
				return v.value, true
			}
		}
	}
	return s.ghostOf(key, data)
}

// ghostOf is the object of key's ghost decoded from data, if it is still
// alive. Call it with the shard's lock held.
func (s *hotShard[V]) ghostOf(key string, data []byte) (V, bool) {
	if obj, ok := s.ghosts.byKey[key].of(data); ok {
		if v, ok := obj.(V); ok {
			return v, true
		}
	}
	var zero V
	return zero, false
}

// Put caches value as the object decoded from data under key, the key's
// current version; the one it replaces stays readable as the previous
// version. When the shard is full, another key is evicted.
func (h *HotCache[V]) Put(key string, data []byte, value V) {
	s := h.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.index[key]
	if !ok {
		if i = s.claimLocked(key); i < 0 {
			return
		}
	}
	slot := &s.slots[i]
	slot.prev = slot.cur
	if slot.taken {
		slot.prev = hotVersion[V]{}
	}
	slot.cur, slot.taken = hotVersion[V]{data, value}, false
	slot.used.Store(false)
}

// TakeOld is Get for a write's old object, which the write reads once: a
// previous version found is dropped, and a current one is not kept as the
// previous version by the key's next Put.
func (h *HotCache[V]) TakeOld(key string, data []byte) (V, bool) {
	s := h.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.index[key]; ok {
		slot := &s.slots[i]
		switch {
		case sameBytes(slot.cur.data, data):
			slot.taken = true
			return slot.cur.value, true
		case sameBytes(slot.prev.data, data):
			v := slot.prev.value
			slot.prev = hotVersion[V]{}
			return v, true
		}
	}
	return s.ghostOf(key, data)
}

// Offer caches value as the object decoded from data under key only if the
// cache holds nothing for key: a reader that decoded an object must not
// displace a newer version a writer put meanwhile.
func (h *HotCache[V]) Offer(key string, data []byte, value V) {
	s := h.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.index[key]; ok {
		return
	}
	i := s.claimLocked(key)
	if i < 0 {
		return
	}
	slot := &s.slots[i]
	slot.cur = hotVersion[V]{data, value}
	slot.used.Store(false)
}

// claimLocked gives key an empty slot, growing the shard up to its limit
// and evicting another key beyond it, and returns the slot's index; -1
// when the shard's limit is 0 (SetCapacity).
func (s *hotShard[V]) claimLocked(key string) int {
	if s.limit == 0 {
		return -1
	}
	i := len(s.slots)
	if i < s.limit {
		s.slots = append(s.slots, hotSlot[V]{})
	} else {
		i = s.victim()
		if s.slots[i].live {
			s.buryLocked(&s.slots[i])
		}
	}
	s.index[key] = i
	s.slots[i] = hotSlot[V]{key: key, live: true}
	return i
}

// buryLocked evicts slot's key, remembering its current version as a
// ghost.
func (s *hotShard[V]) buryLocked(slot *hotSlot[V]) {
	delete(s.index, slot.key)
	if g, ok := makeGhost(slot.cur); ok {
		s.ghosts.bury(slot.key, g)
	}
}

// victim advances the clock to a free slot or to one not used since the
// hand last passed it.
func (s *hotShard[V]) victim() int {
	for {
		i := s.hand
		s.hand = (s.hand + 1) % len(s.slots)
		slot := &s.slots[i]
		if !slot.live || !slot.used.Swap(false) {
			return i
		}
	}
}

// Delete drops key's entry, if any, releasing its bytes and object.
func (h *HotCache[V]) Delete(key string) {
	s := h.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ghosts.byKey, key)
	i, ok := s.index[key]
	if !ok {
		return
	}
	delete(s.index, key)
	s.slots[i] = hotSlot[V]{}
}

// Len is the number of cached entries.
func (h *HotCache[V]) Len() int {
	n := 0
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.RLock()
		n += len(s.index)
		s.mu.RUnlock()
	}
	return n
}

// Capacity is the most entries the cache holds.
func (h *HotCache[V]) Capacity() int {
	n := 0
	for i := range h.shards {
		s := &h.shards[i]
		s.mu.RLock()
		n += s.limit
		s.mu.RUnlock()
	}
	return n
}

// SetCapacity changes the most entries the cache holds to capacity (spread
// over its shards as NewHotCache does; 0 keeps none), evicting the entries
// beyond it: a memory budget shrinks the cache and lets it grow back.
func (h *HotCache[V]) SetCapacity(capacity int) {
	capacity = max(capacity, 0)
	per := (capacity + len(h.shards) - 1) / len(h.shards)
	for i := range h.shards {
		h.shards[i].setLimit(per)
	}
}

// setLimit sets the shard's limit, dropping the slots beyond it.
func (s *hotShard[V]) setLimit(limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = limit
	if len(s.slots) <= limit {
		return
	}
	for i := limit; i < len(s.slots); i++ {
		if s.slots[i].live {
			s.buryLocked(&s.slots[i])
		}
	}
	clear(s.slots[limit:]) // the objects go with their entries, kept only weakly
	s.slots = s.slots[:limit]
	if s.hand >= limit {
		s.hand = 0
	}
}
