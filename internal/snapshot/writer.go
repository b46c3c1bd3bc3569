package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"unsafe"
)

// writeBuffer is the size of the Writer's buffer: large enough that writes
// reach the file in few system calls, small beside a cache.
const writeBuffer = 256 << 10

// Writer streams one snapshot. Made by Create, it writes to a temporary
// file beside its final path: Add exactly Header.Count records, then Commit,
// or Abort to give up; either removes the temporary file unless Commit
// renamed it. Made by NewWriter, it writes to any io.Writer (an upload, a
// buffer) and Commit only ends the stream. A Writer is not safe for
// concurrent use, and two Writers must not share a path.
type Writer struct {
	path, tmp string
	f         *os.File // nil for NewWriter's
	buf       *bufio.Writer
	sum       uint32 // CRC-32C of what was written
	want, n   int
	scratch   [2 * binary.MaxVarintLen64]byte
	err       error
}

// Create starts a snapshot that Commit will move to path, writing h.
func Create(path string, h Header) (*Writer, error) {
	if err := h.valid(); err != nil {
		return nil, err
	}
	f, err := createTemp(path)
	if err != nil {
		return nil, err
	}
	w := &Writer{path: path, tmp: f.Name(), f: f}
	if err := w.start(f, h); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// NewWriter starts a snapshot written to dst, writing h. Commit writes the
// trailer and flushes; nothing is synced, renamed or removed.
func NewWriter(dst io.Writer, h Header) (*Writer, error) {
	if err := h.valid(); err != nil {
		return nil, err
	}
	w := &Writer{}
	if err := w.start(dst, h); err != nil {
		return nil, err
	}
	return w, nil
}

func (h *Header) valid() error {
	if h.ResourceVersion == "" {
		return fmt.Errorf("snapshot: header without a resourceVersion")
	}
	if h.Count < 0 {
		return fmt.Errorf("snapshot: negative record count %d", h.Count)
	}
	return nil
}

// start writes everything before the records.
func (w *Writer) start(dst io.Writer, h Header) error {
	w.want = h.Count
	w.buf = bufio.NewWriterSize(dst, writeBuffer)
	w.write([]byte(magic))
	w.uvarint(FormatVersion)
	header := appendHeader(nil, &h)
	w.uvarint(uint64(len(header)))
	w.write(header)
	w.write(binary.LittleEndian.AppendUint32(nil, crc32.Checksum(header, castagnoli)))
	w.uvarint(uint64(h.Count))
	return w.err
}

// appendHeader appends h's fields, each a length and its bytes.
func appendHeader(dst []byte, h *Header) []byte {
	field := func(b []byte) {
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	for _, f := range h.identity() {
		field([]byte(f.value))
	}
	field(h.Dictionary)
	field([]byte(h.ResourceVersion))
	return binary.AppendVarint(dst, h.WrittenAt.UnixNano())
}

// Add writes one record; its key is written through a read-only view of
// its bytes, so that the caller's string is not copied. value is copied before Add returns, so a caller
// may encode every record into one reused buffer.
func (w *Writer) Add(key string, value []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.n == w.want {
		return w.fail(fmt.Errorf("snapshot: more records than the header's %d", w.want))
	}
	if len(key) > maxKey || len(value) > maxValue {
		return w.fail(fmt.Errorf("snapshot: record %q too large (%d bytes)", key, len(value)))
	}
	w.n++
	w.uvarint(uint64(len(key)))
	w.write(unsafe.Slice(unsafe.StringData(key), len(key)))
	w.uvarint(uint64(len(value)))
	w.write(value)
	return w.err
}

// Commit writes the trailer and, for Create's Writer, syncs the file,
// renames it to the final path and syncs the directory, so that after a
// crash the path holds either the previous snapshot or this one, complete.
func (w *Writer) Commit() error {
	if w.err == nil && w.n != w.want {
		w.fail(fmt.Errorf("snapshot: %d records for the header's %d", w.n, w.want))
	}
	if w.err != nil {
		w.Abort()
		return w.err
	}
	trailer := binary.LittleEndian.AppendUint32([]byte(trailerMark), w.sum)
	if _, err := w.buf.Write(trailer); err != nil {
		return w.abortWith(err)
	}
	if err := w.buf.Flush(); err != nil {
		return w.abortWith(err)
	}
	if w.f == nil {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return w.abortWith(err)
	}
	if err := w.f.Close(); err != nil {
		w.f = nil
		return w.abortWith(err)
	}
	w.f = nil
	if err := renameOwn(w.tmp, w.path); err != nil {
		return w.abortWith(err)
	}
	return syncDir(filepath.Dir(w.path))
}

// Abort gives the snapshot up and removes the temporary file, if any.
func (w *Writer) Abort() {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
	if w.tmp != "" {
		_ = os.Remove(w.tmp)
	}
	if w.err == nil {
		w.err = fmt.Errorf("snapshot: aborted")
	}
}

func (w *Writer) abortWith(err error) error {
	w.fail(err)
	w.Abort()
	return w.err
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Reason: IOReason, Path: w.path, Err: err}
		}
		w.err = e
	}
	return w.err
}

func (w *Writer) uvarint(v uint64) {
	w.write(binary.AppendUvarint(w.scratch[:0], v))
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	w.sum = crc32.Update(w.sum, castagnoli, b)
	if _, err := w.buf.Write(b); err != nil {
		w.fail(err)
	}
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return &Error{Reason: IOReason, Path: dir, Err: err}
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return &Error{Reason: IOReason, Path: dir, Err: err}
	}
	return nil
}
