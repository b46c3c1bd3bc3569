package hashmap

import "unsafe"

// slot holds one entry: its value, its key, the top 32 bits of the key's
// hash (its hash32, all the map places keys by) and the entry's distance
// from its home slot. The key is kept as a pointer and a 24-bit length
// that shares a word with the distance byte, so that a slot is no larger
// than a string and a value: growing and splitting a table place each
// entry from its slot alone, without reading (and missing the cache on)
// the key's bytes or hashing them again, and a probe finds an entry's
// distance, hash and key in the one slot it reads. The value comes first:
// a zero-size value (a set's struct{}) placed last would make the
// compiler pad every slot by a word.
type slot[V any] struct {
	val  V
	kptr unsafe.Pointer
	// info is the key's length shifted left by distBits over the distance
	// byte (0 in an empty slot; see metaOf).
	info uint32
	hash uint32
}

// boxed is the length field of a key too long for its 24 bits: kptr then
// points at a string holding it. Keys of 16 MiB are far past any store's,
// but one must still be kept whole.
const boxed = 1<<(32-distBits) - 1

// boxFrom is the length from which a key is boxed; tests lower it.
var boxFrom = boxed

// hash32 is the part of a 64-bit Hash that the map keeps and places keys
// by: its top bits, which the directory indexes by as well.
func hash32(h uint64) uint32 { return uint32(h >> 32) }

// newSlot is the slot of key, whose hash32 is h, with the zero value, at
// distance d from its home.
func newSlot[V any](h uint32, key string, d int) slot[V] {
	if len(key) >= boxFrom {
		return slot[V]{kptr: box(key), info: boxed<<distBits | uint32(metaOf(d)), hash: h}
	}
	return slot[V]{kptr: unsafe.Pointer(unsafe.StringData(key)), info: uint32(len(key))<<distBits | uint32(metaOf(d)), hash: h}
}

// box returns a pointer to a copy of key's header. It is apart from
// newSlot so that newSlot's key does not move to the heap on every call.
func box(key string) unsafe.Pointer {
	p := new(string)
	*p = key
	return unsafe.Pointer(p)
}

// key returns the slot's key.
func (s *slot[V]) key() string {
	n := s.info >> distBits
	if n == boxed {
		return *(*string)(s.kptr)
	}
	return unsafe.String((*byte)(s.kptr), n)
}

// meta is the slot's distance byte: 0 for an empty slot.
func (s *slot[V]) meta() uint8 { return uint8(s.info) }

// setMeta replaces the slot's distance byte by m.
func (s *slot[V]) setMeta(m uint8) { s.info = s.info&^(1<<distBits-1) | uint32(m) }
