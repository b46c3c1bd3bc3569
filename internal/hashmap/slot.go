package hashmap

import (
	"math"
	"unsafe"
)

// slot holds one entry: its value, its key, and the top 32 bits of the
// key's hash, which is all the map draws on (see hash32). The key is kept
// as a pointer and a 32-bit length, so that the hash bits fit in the word
// a string's length would take: growing and splitting a table place each
// entry from its slot alone, without reading (and missing the cache on)
// the key's bytes or hashing them again. The value comes first: a
// zero-size value (a set's struct{}) placed last would make the compiler
// pad every slot by a word.
type slot[V any] struct {
	val  V
	kptr unsafe.Pointer
	klen uint32
	hash uint32
}

// boxed is the klen of a key too long for 32 bits: kptr then points at a
// string holding it. No key that fits in memory beside a store's objects
// comes near, but one must still be kept whole.
const boxed = math.MaxUint32

// boxFrom is the length from which a key is boxed; tests lower it.
var boxFrom uint64 = boxed

// hash32 is the part of a 64-bit Hash that the map keeps and places keys
// by: its top bits, which the directory indexes by as well.
func hash32(h uint64) uint32 { return uint32(h >> 32) }

// newSlot is the slot of key, whose hash32 is h, with the zero value.
func newSlot[V any](h uint32, key string) slot[V] {
	if uint64(len(key)) >= boxFrom {
		return slot[V]{kptr: box(key), klen: boxed, hash: h}
	}
	return slot[V]{kptr: unsafe.Pointer(unsafe.StringData(key)), klen: uint32(len(key)), hash: h}
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
	if s.klen == boxed {
		return *(*string)(s.kptr)
	}
	return unsafe.String((*byte)(s.kptr), s.klen)
}
