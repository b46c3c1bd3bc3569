package compact

import (
	"bytes"
	"errors"
	"math"
	"sync"
	"unsafe"
)

// Encoding is an object's compact bytes as a Codec keeps them: in one
// allocation, or in two when one would leave much of its size class unused
// (a 10.3 KB pod takes 10880 bytes in one piece, 10240 + 80 in two). The
// pieces are never modified once made. It holds pointers and 32-bit lengths
// rather than slices because a cache holds one per object: 24 bytes instead
// of 48.
type Encoding struct {
	head, tail       *byte
	headLen, tailLen uint32
}

// ErrTooLarge is returned for an object whose encoding would not fit in an
// Encoding (4 GiB; the API server refuses objects far smaller).
var ErrTooLarge = errors.New("compact: encoding larger than 4 GiB")

// newEncoding copies b into the pieces splitAt chooses.
func newEncoding(b []byte) (Encoding, error) {
	if len(b) > math.MaxUint32 {
		return Encoding{}, ErrTooLarge
	}
	at := splitAt(len(b))
	e := whole(bytes.Clone(b[:at]))
	if at < len(b) {
		tail := bytes.Clone(b[at:])
		e.tail, e.tailLen = unsafe.SliceData(tail), uint32(len(tail))
	}
	return e, nil
}

// whole is an Encoding of one piece, b itself, which must be non-empty.
func whole(b []byte) Encoding {
	return Encoding{head: unsafe.SliceData(b), headLen: uint32(len(b))}
}

// Len is the length of the encoding.
func (e Encoding) Len() int { return int(e.headLen) + int(e.tailLen) }

// Identity is the encoding's first piece, never empty, and the same slice
// on every call: a HotCache recognises the object decoded from an
// Encoding by it. While it is kept, no other Encoding gets its address.
func (e Encoding) Identity() []byte { return unsafe.Slice(e.head, e.headLen) }

// Bytes returns the encoding in a fresh slice of its own.
func (e Encoding) Bytes() []byte {
	return append(append(make([]byte, 0, e.Len()), e.Identity()...), e.tailBytes()...)
}

func (e Encoding) tailBytes() []byte { return unsafe.Slice(e.tail, e.tailLen) }

// maxPooled bounds the scratch buffers kept for reuse, so that one huge
// object does not pin its size in memory.
const maxPooled = 256 << 10

// scratch is a reusable buffer for encoding and for joining pieces.
type scratch struct{ buf bytes.Buffer }

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// getScratch returns an empty scratch with room for n bytes.
func getScratch(n int) *scratch {
	s := scratches.Get().(*scratch)
	s.buf.Reset()
	s.buf.Grow(n)
	return s
}

func (s *scratch) release() {
	if s.buf.Cap() <= maxPooled {
		scratches.Put(s)
	}
}

// joined returns e's bytes contiguous: the first piece itself when it is
// the only one, else both copied into s.
func (e Encoding) joined(s *scratch) []byte {
	if e.tailLen == 0 {
		return e.Identity()
	}
	return append(append(s.buf.AvailableBuffer(), e.Identity()...), e.tailBytes()...)
}
