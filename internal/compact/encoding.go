package compact

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"unsafe"
)

// Encoding is an object's compact bytes as a Codec keeps them. It is one
// pointer, so that an interface holds it without allocating: a cache keeps
// no value of its own per object beside the bytes.
//
// The bytes are in one allocation, or in up to three when one would leave
// much of its size class unused (see plan): head pieces filling a size
// class exactly and a last piece that points to them. The pointer is to the
// last piece's prefix, which says how the rest is laid out:
//
//	uvarint(last<<5 | flags<<2 | heads)    the body bytes in this piece, the header flags, the head count
//	uvarint(tag)                           if flagTagged: the codec's tag
//	uvarint(code) per head                 each head's size class (pieceCode)
//	the body's bytes after the heads'
//
// A last piece with heads is an object whose first words are the heads'
// pointers, so that the garbage collector keeps them; its bytes follow.
// Pieces are never modified once made.
type Encoding struct{ p *byte }

// The flags of an encoding's prefix.
const (
	// flagTypeMeta marks a typed object whose TypeMeta was set to the
	// codec's kind: protobuf does not carry TypeMeta, so it is restored
	// from this.
	flagTypeMeta byte = 1 << iota
	// flagCompressed marks bytes compressed with the codec's Compressor.
	flagCompressed
	// flagTagged marks an encoding whose codec has a tag other than 0.
	flagTagged

	flagBits  = 3
	headBits  = 2
	maxHeads  = 2
	wordBytes = int(unsafe.Sizeof(uintptr(0)))
)

// ErrTooLarge is returned for an object whose encoding would be 4 GiB or
// more (the API server refuses objects far smaller).
var ErrTooLarge = errors.New("compact: encoding larger than 4 GiB")

// layout is what an encoding's prefix says.
type layout struct {
	length int // of the body
	flags  byte
	tag    uint32
	heads  int
	// headLen is the length of each head piece.
	headLen [maxHeads]int
	// prefix is the prefix's length, where the last piece's body bytes
	// begin.
	prefix int
}

// lastLen is the number of body bytes in the last piece.
func (l *layout) lastLen() int {
	n := l.length
	for _, h := range l.headLen[:l.heads] {
		n -= h
	}
	return n
}

// appendPrefix appends l's prefix to dst.
func (l *layout) appendPrefix(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(l.lastLen())<<(flagBits+headBits)|uint64(l.flags)<<headBits|uint64(l.heads))
	if l.flags&flagTagged != 0 {
		dst = binary.AppendUvarint(dst, uint64(l.tag))
	}
	for _, h := range l.headLen[:l.heads] {
		dst = binary.AppendUvarint(dst, pieceCode(h))
	}
	return dst
}

// layout reads e's prefix.
func (e Encoding) layout() layout {
	var l layout
	v := e.uvarint(&l.prefix)
	l.length = int(v >> (flagBits + headBits))
	l.flags = byte(v>>headBits) & (1<<flagBits - 1)
	l.heads = int(v & (1<<headBits - 1))
	if l.flags&flagTagged != 0 {
		l.tag = uint32(e.uvarint(&l.prefix))
	}
	for i := range l.heads {
		l.headLen[i] = pieceLen(e.uvarint(&l.prefix))
		l.length += l.headLen[i]
	}
	return l
}

// uvarint reads the uvarint at offset *at of e's prefix and moves *at past
// it. It reads byte by byte: the piece may be shorter than the longest
// uvarint.
func (e Encoding) uvarint(at *int) uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		b := *(*byte)(unsafe.Add(unsafe.Pointer(e.p), *at))
		*at++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v
		}
	}
}

// head is the first byte of head piece i of l's heads.
func (e Encoding) head(l *layout, i int) *byte {
	return *(**byte)(unsafe.Add(unsafe.Pointer(e.p), -wordBytes*(l.heads-i)))
}

// last is the body bytes of e's last piece, nil when there are none (a
// pointer past the prefix would then point past the piece).
func (e Encoding) last(l *layout) []byte {
	n := l.lastLen()
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(e.p), l.prefix)), n)
}

// Len is the length of the encoding's body: the serializer's bytes,
// compressed or not.
func (e Encoding) Len() int { return e.layout().length }

// Compressed reports whether e's body is compressed (a cold encoding, or
// one of a codec with a Compressor).
func (e Encoding) Compressed() bool { return e.layout().flags&flagCompressed != 0 }

// Identity is a slice of the last piece, never empty, and the same slice on
// every call: a HotCache recognises the object decoded from an Encoding by
// it. While it is kept, no other Encoding gets its address.
func (e Encoding) Identity() []byte { return unsafe.Slice(e.p, 1) }

// Bytes returns the encoding's body in a fresh slice of its own.
func (e Encoding) Bytes() []byte {
	l := e.layout()
	return e.appendBody(make([]byte, 0, l.length), &l)
}

// appendBody appends e's body, laid out as l says, to dst.
func (e Encoding) appendBody(dst []byte, l *layout) []byte {
	for i, h := range l.headLen[:l.heads] {
		dst = append(dst, unsafe.Slice(e.head(l, i), h)...)
	}
	return append(dst, e.last(l)...)
}

// joined returns e's body contiguous: the last piece's bytes themselves
// when it is the only piece, else all pieces copied into s.
func (e Encoding) joined(l *layout, s *scratch) []byte {
	if l.heads == 0 {
		return e.last(l)
	}
	return e.appendBody(s.buf.AvailableBuffer(), l)
}

// pieces are where a new encoding's body goes, in order: the head pieces'
// bytes, then the last piece's.
type pieces [maxHeads + 1][]byte

// fill copies body into p.
func (p *pieces) fill(body []byte) {
	for _, dst := range p {
		body = body[copy(dst, body):]
	}
}

// allocEncoding makes the pieces of an encoding of a body of n bytes with
// flags and tag, its prefix written, and returns where the body goes.
func allocEncoding(flags byte, tag uint32, n int) (Encoding, pieces, error) {
	if n > math.MaxUint32 {
		return Encoding{}, pieces{}, ErrTooLarge
	}
	tagLen := 0
	if tag != 0 {
		flags |= flagTagged
		tagLen = uvarintLen(uint64(tag))
	}
	pl := plan(n, tagLen)
	l := layout{length: n, flags: flags, tag: tag, heads: pl.heads, headLen: pl.headLen}
	var meta [(2 + maxHeads) * binary.MaxVarintLen64]byte
	prefix := l.appendPrefix(meta[:0])
	l.prefix = len(prefix)
	var out pieces
	if l.heads == 0 {
		b := make([]byte, len(prefix)+n)
		copy(b, prefix)
		out[0] = b[len(prefix):]
		return Encoding{p: unsafe.SliceData(b)}, out, nil
	}
	base := newLast(l.heads, l.heads*wordBytes+len(prefix)+l.lastLen())
	for i, h := range l.headLen[:l.heads] {
		head := make([]byte, h)
		*(**byte)(unsafe.Add(base, i*wordBytes)) = unsafe.SliceData(head)
		out[i] = head
	}
	e := Encoding{p: (*byte)(unsafe.Add(base, l.heads*wordBytes))}
	copy(unsafe.Slice(e.p, len(prefix)), prefix)
	out[l.heads] = e.last(&l)
	return e, out, nil
}

// newEncoding copies body into a new encoding with flags and tag.
func newEncoding(flags byte, tag uint32, body []byte) (Encoding, error) {
	e, p, err := allocEncoding(flags, tag, len(body))
	if err == nil {
		p.fill(body)
	}
	return e, err
}

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
