package cache

import "math/bits"

// hashSet is a set of hashes in an open-addressing table, emptied and sized
// for each batch. Zero marks an empty slot, so a hash of 0 is kept as 1: two
// keys that differ only there collide, which is allowed of any hash.
type hashSet struct{ slots []uint64 }

// reset empties the set and makes room for n hashes at most half full.
func (s *hashSet) reset(n int) {
	size := 1 << bits.Len(uint(2*n-1))
	if cap(s.slots) < size {
		s.slots = make([]uint64, size)
		return
	}
	s.slots = s.slots[:size]
	clear(s.slots)
}

// add inserts h and reports whether it was absent.
func (s *hashSet) add(h uint64) bool {
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
