package snapshot

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"time"
)

// readBuffer is the size of the Reader's buffer.
const readBuffer = 256 << 10

// Reader reads one snapshot: its header at once, its records with Next.
// The records are trustworthy only once Next has returned io.EOF, which
// means the trailer's checksum matched: a caller loading a store builds the
// new content aside and keeps it only then. A Reader is not safe for
// concurrent use.
type Reader struct {
	path   string
	file   *os.File
	br     *bufio.Reader
	left   int64 // bytes not yet consumed; -1 when the size is unknown
	read   int64 // bytes consumed
	sum    uint32
	header Header
	// records is how many records are still to read.
	records    int
	key, value []byte
	// varint holds a length as it is read: a local array would escape
	// through the checksum's call.
	varint [binary.MaxVarintLen64]byte
	err    error
}

// Open opens the snapshot at path and checks its header against expect
// (see NewReader). A missing file is an *Error with MissingReason.
func Open(path string, expect *Header) (*Reader, error) {
	return openFile(path, func(f *os.File, size int64) (*Reader, error) {
		r, err := newReader(path, f, size, expect)
		if err == nil {
			r.file = f
		}
		return r, err
	})
}

// openFile opens path and makes a Reader of it with read, which the Reader
// then closes; the file is closed at once if read fails.
func openFile[R any](path string, read func(f *os.File, size int64) (*R, error)) (*R, error) {
	f, err := openOwn(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &Error{Reason: IOReason, Path: path, Err: err}
	}
	r, err := read(f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// NewReader reads a snapshot of size bytes (-1 if unknown) from src and
// checks its header: the format version, and, unless expect is nil, each
// identity field of Header against expect's.
func NewReader(src io.Reader, size int64, expect *Header) (*Reader, error) {
	return newReader("", src, size, expect)
}

func newReader(path string, src io.Reader, size int64, expect *Header) (*Reader, error) {
	r := &Reader{path: path, br: bufio.NewReaderSize(src, readBuffer), left: size}
	if err := r.readHeader(); err != nil {
		return nil, err
	}
	if expect != nil {
		if err := r.check(expect); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Header returns the snapshot's header.
func (r *Reader) Header() Header { return r.header }

// Close closes the file Open opened.
func (r *Reader) Close() error {
	if r.file == nil {
		return nil
	}
	err := r.file.Close()
	r.file = nil
	return err
}

// Next returns the next record; key and value are valid until the next
// call. After the last record it checks the trailer and returns io.EOF,
// or an *Error when the file is truncated or corrupt.
func (r *Reader) Next() (key, value []byte, err error) {
	if r.err != nil {
		return nil, nil, r.err
	}
	if r.records == 0 {
		r.err = r.readTrailer()
		if r.err == nil {
			r.err = io.EOF
		}
		return nil, nil, r.err
	}
	r.records--
	if r.key, err = r.bytes(r.key, maxKey, "key"); err != nil {
		return nil, nil, r.fail(err)
	}
	if r.value, err = r.bytes(r.value, maxValue, "value"); err != nil {
		return nil, nil, r.fail(err)
	}
	return r.key, r.value, nil
}

func (r *Reader) readHeader() error {
	if err := r.readPrelude(magic); err != nil {
		return err
	}
	count, err := r.uvarint()
	if err != nil {
		return err
	}
	// Every record takes at least two bytes.
	if count > uint64(maxInt) || (r.left >= 0 && count > uint64(r.left)/2) {
		return r.refuse(TruncatedReason, fmt.Sprintf("%d records cannot fit", count))
	}
	r.records, r.header.Count = int(count), int(count)
	return nil
}

// readPrelude reads the magic, the format version and the header, whose
// checksum is verified before any of its fields is looked at.
func (r *Reader) readPrelude(want string) error {
	if err := r.readMagic(want); err != nil {
		return err
	}
	raw, err := r.bytes(nil, maxHeader, "header")
	if err != nil {
		return err
	}
	var sum [4]byte
	if err := r.full(sum[:]); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(sum[:]) != crc32.Checksum(raw, castagnoli) {
		return r.refuse(CorruptReason, "header checksum")
	}
	return r.parseHeader(raw)
}

// readMagic reads what snapshots and journals start with: their magic
// (want) and the format version.
func (r *Reader) readMagic(want string) error {
	got := make([]byte, len(want))
	if err := r.full(got); err != nil {
		if ReasonOf(err) == TruncatedReason {
			return r.refuse(NotSnapshotReason, "shorter than the magic bytes")
		}
		return err
	}
	if string(got) != want {
		return r.refuse(NotSnapshotReason, "other magic bytes")
	}
	version, err := r.uvarint()
	if err != nil {
		return err
	}
	if version != FormatVersion {
		return &Error{Reason: FormatVersionReason, Path: r.path, Field: "format version",
			Got: strconv.FormatUint(version, 10), Want: strconv.Itoa(FormatVersion)}
	}
	return nil
}

const maxInt = int(^uint(0) >> 1)

// parseHeader fills r.header from the header's bytes.
func (r *Reader) parseHeader(raw []byte) error {
	p := headerParser{raw: raw}
	h := &r.header
	for _, dst := range []*string{&h.Resource, &h.Namespace, &h.LabelSelector, &h.FieldSelector, &h.Shard, &h.Encoding, &h.Cluster} {
		*dst = string(p.field())
	}
	if d := p.field(); len(d) > 0 {
		h.Dictionary = bytes.Clone(d)
	}
	h.ResourceVersion = string(p.field())
	nanos, n := binary.Varint(p.raw)
	switch {
	case p.bad || n <= 0:
		return r.refuse(CorruptReason, "malformed header")
	case n != len(p.raw):
		return r.refuse(CorruptReason, "unknown header fields")
	case h.ResourceVersion == "":
		return r.refuse(CorruptReason, "header without a resourceVersion")
	}
	h.WrittenAt = time.Unix(0, nanos)
	return nil
}

// headerParser splits a header into its length-prefixed fields.
type headerParser struct {
	raw []byte
	bad bool
}

func (p *headerParser) field() []byte {
	n, k := binary.Uvarint(p.raw)
	if p.bad || k <= 0 || n > uint64(len(p.raw)-k) {
		p.bad = true
		return nil
	}
	f := p.raw[k : k+int(n)]
	p.raw = p.raw[k+int(n):]
	return f
}

// check compares the identity fields with expect's.
func (r *Reader) check(expect *Header) error {
	want, got := expect.identity(), r.header.identity()
	for i := range want {
		if want[i].value != got[i].value {
			return &Error{Reason: MismatchReason, Path: r.path, Field: want[i].name, Want: want[i].value, Got: got[i].value}
		}
	}
	return nil
}

func (r *Reader) readTrailer() error {
	sum := r.sum
	var t [len(trailerMark) + 4]byte
	if err := r.full(t[:]); err != nil {
		return err
	}
	if string(t[:len(trailerMark)]) != trailerMark {
		return r.refuse(CorruptReason, "no trailer after the last record")
	}
	if got := binary.LittleEndian.Uint32(t[len(trailerMark):]); got != sum {
		return r.refuse(CorruptReason, fmt.Sprintf("checksum %08x, computed %08x", got, sum))
	}
	if _, err := r.br.ReadByte(); err != io.EOF {
		return r.refuse(CorruptReason, "data after the trailer")
	}
	return nil
}

// bytes reads a length (at most limit) and that many bytes into buf.
func (r *Reader) bytes(buf []byte, limit uint64, what string) ([]byte, error) {
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, r.refuse(CorruptReason, fmt.Sprintf("%s length %d over the limit %d", what, n, limit))
	}
	if r.left >= 0 && n > uint64(r.left) {
		return nil, r.refuse(TruncatedReason, fmt.Sprintf("%s of %d bytes, %d left in the file", what, n, r.left))
	}
	if uint64(cap(buf)) < n {
		// Doubling keeps growth to a few allocations when values grow.
		buf = make([]byte, n, max(int(n), 2*cap(buf)))
	}
	buf = buf[:n]
	return buf, r.full(buf)
}

// uvarint reads one uvarint.
func (r *Reader) uvarint() (uint64, error) {
	b := r.varint[:]
	for i := range b {
		c, err := r.br.ReadByte()
		if err != nil {
			return 0, r.readError(err)
		}
		b[i] = c
		if c < 0x80 {
			r.consumed(b[:i+1])
			v, n := binary.Uvarint(b[:i+1])
			if n <= 0 {
				return 0, r.refuse(CorruptReason, "malformed length")
			}
			return v, nil
		}
	}
	return 0, r.refuse(CorruptReason, "malformed length")
}

// full fills buf.
func (r *Reader) full(buf []byte) error {
	if _, err := io.ReadFull(r.br, buf); err != nil {
		return r.readError(err)
	}
	r.consumed(buf)
	return nil
}

func (r *Reader) consumed(b []byte) {
	r.sum = crc32.Update(r.sum, castagnoli, b)
	r.read += int64(len(b))
	if r.left >= 0 {
		r.left -= int64(len(b))
	}
}

func (r *Reader) readError(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return r.refuse(TruncatedReason, "file ends early")
	}
	return &Error{Reason: IOReason, Path: r.path, Err: err}
}

func (r *Reader) refuse(reason Reason, detail string) error {
	return &Error{Reason: reason, Path: r.path, Detail: detail}
}

func (r *Reader) fail(err error) error {
	r.err = err
	return err
}
