// Package coldtier compresses the stored bytes of cached objects that nobody
// has read or written for a while, one object at a time, with a dictionary
// made from the cache's own objects: objects of one informer share most of
// their bytes with each other, not with themselves, so a dictionary is what
// makes compressing a single 1-10 KB object pay.
//
// The codec is Zstandard (github.com/klauspost/compress/zstd) at its fastest
// level with a raw content dictionary: the tail of the concatenated sample
// encodings. docs/MEMORY.md "Cold tier codec" has the measurements it was
// chosen by (against trained zstd dictionaries, S2 and DEFLATE).
//
// A record is self-describing: one byte of Version, then a Zstandard frame
// that names its dictionary by ID. Records are meant to be kept as they are
// in snapshots, together with the Dictionary's Bytes.
package coldtier

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/klauspost/compress/zstd"
)

// Version is the first byte of every record and of a Dictionary's Bytes. A
// new codec or layout gets a new Version, so that records kept in a
// snapshot are either decoded as they were written or refused.
const Version byte = 1

// DefaultSize is the dictionary size Train uses when given none: 64 KiB
// keeps a realistic pod at ~0.07x of its protobuf bytes (~0.14x
// without managedFields); doubling it gains 2-3%.
const DefaultSize = 64 << 10

// maxDecoded bounds what one record may decompress to, so that a corrupt
// record declaring a huge size fails instead of allocating it. Kubernetes
// objects are bounded by etcd's request size (1.5 MiB by default).
const maxDecoded = 64 << 20

var (
	// ErrVersion is returned for a record or dictionary of another Version.
	ErrVersion = errors.New("coldtier: unknown record version")
	// ErrCorrupt is returned for a record that does not decompress with
	// its dictionary, including one made with another dictionary.
	ErrCorrupt = errors.New("coldtier: corrupt record or wrong dictionary")
)

// Dictionary compresses records and decompresses them. It is safe for
// concurrent use; Close releases it.
type Dictionary struct {
	id      uint32
	content []byte
	enc     *zstd.Encoder
	dec     *zstd.Decoder
}

// Train returns a Dictionary of at most size bytes (DefaultSize when size
// is 0 or less) made from samples, the stored bytes of typical objects. The
// samples are concatenated in reverse order, so that the first ends nearest
// the data, where matches are cheapest, and what does not fit is cut from
// the front: a caller should give distinct, typical objects (spread over
// namespaces and owners, say), most typical first. Nothing of samples is
// kept. Train errors when samples are empty.
func Train(samples [][]byte, size int) (*Dictionary, error) {
	if size <= 0 {
		size = DefaultSize
	}
	var content []byte
	for i := len(samples) - 1; i >= 0; i-- {
		content = append(content, samples[i]...)
	}
	if len(content) == 0 {
		return nil, errors.New("coldtier: no samples to make a dictionary from")
	}
	content = bytes.Clone(content[max(0, len(content)-size):])
	return newDictionary(contentID(content), content)
}

// contentID names a dictionary by its content, so that a record compressed
// with one dictionary is refused by another rather than decoded into wrong
// bytes. It avoids the ranges the Zstandard format reserves.
func contentID(content []byte) uint32 {
	h := fnv.New32a()
	_, _ = h.Write(content)
	return h.Sum32()&0x7fffffff | 0x8000
}

func newDictionary(id uint32, content []byte) (*Dictionary, error) {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderDictRaw(id, content),
		// The default window (8 MiB) costs ~5 MB of encoder state per
		// Dictionary; objects are far smaller, and a window twice the
		// dictionary costs ~0.5 MB.
		zstd.WithWindowSize(windowFor(len(content))),
		zstd.WithLowerEncoderMem(true),
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderCRC(false),     // the cache's bytes are in memory, not on a wire
		zstd.WithEncoderConcurrency(1), // compression is one background worker's
		zstd.WithSingleSegment(true),
		zstd.WithZeroFrames(true)) // so that every record has a frame to check

	if err != nil {
		return nil, fmt.Errorf("coldtier: %w", err)
	}
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderDictRaw(id, content),
		// The default, min(4, GOMAXPROCS) decodes at once, ~30 KB each.
		zstd.WithDecoderMaxMemory(maxDecoded))
	if err != nil {
		enc.Close()
		return nil, fmt.Errorf("coldtier: %w", err)
	}
	return &Dictionary{id: id, content: content, enc: enc, dec: dec}, nil
}

// windowFor is the encoder's window for a dictionary of n bytes: a power
// of two at least twice n and at least 128 KiB.
func windowFor(n int) int {
	w := 128 << 10
	for w < 2*n {
		w *= 2
	}
	return w
}

// Load returns the Dictionary whose Bytes are data, to decompress records
// kept in a snapshot. data is copied.
func Load(data []byte) (*Dictionary, error) {
	if len(data) < 5 || data[0] != Version {
		return nil, fmt.Errorf("%w: dictionary", ErrVersion)
	}
	content := bytes.Clone(data[5:])
	id := binary.LittleEndian.Uint32(data[1:5])
	if len(content) == 0 || id != contentID(content) {
		return nil, fmt.Errorf("%w: dictionary does not match its ID", ErrCorrupt)
	}
	return newDictionary(id, content)
}

// Bytes returns the dictionary as Load takes it: Version, its ID, and its
// content.
func (d *Dictionary) Bytes() []byte {
	out := make([]byte, 5, 5+len(d.content))
	out[0] = Version
	binary.LittleEndian.PutUint32(out[1:], d.id)
	return append(out, d.content...)
}

// Size is the length of the dictionary's content.
func (d *Dictionary) Size() int { return len(d.content) }

// Compress appends the record of src to dst and returns it. It allocates
// nothing when dst has room for the record (a little more than the
// compressed size; MaxRecordLen bounds it).
func (d *Dictionary) Compress(dst, src []byte) []byte {
	dst = append(dst, Version)
	return d.enc.EncodeAll(src, dst)
}

// MaxRecordLen bounds the length of the record of n bytes.
func MaxRecordLen(n int) int { return 1 + n + n/128 + 64 }

// Decompress appends what rec, a record made by Compress with this
// dictionary, was made from to dst, and returns it. It allocates nothing
// when dst has room for the result.
func (d *Dictionary) Decompress(dst, rec []byte) ([]byte, error) {
	if len(rec) == 0 || rec[0] != Version {
		return dst, ErrVersion
	}
	if len(rec) == 1 {
		return dst, fmt.Errorf("%w: no frame", ErrCorrupt)
	}
	out, err := d.dec.DecodeAll(rec[1:], dst)
	if err != nil {
		return dst, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return out, nil
}

// Close releases the encoder's and decoder's state; the Dictionary must not
// be used after.
func (d *Dictionary) Close() {
	d.enc.Close()
	d.dec.Close()
}
