package snapshot

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// A journal records the changes an informer applied after a snapshot, so
// that a restart after a crash resumes from the last change rather than
// from the last periodic snapshot, which a busy resource's watch window
// has often left behind. It is appended to, one frame per change, and
// never rewritten: a new snapshot starts a new journal.
//
//	magic "OIJRNL\r\n"                      8 bytes
//	uvarint format version                  (FormatVersion)
//	frame(header)                           the snapshot's header: the journal follows that snapshot
//	frame(change)...                        op byte, then rv, key and (for a put) value, each a uvarint length and bytes
//
// where frame(p) is a uvarint length, p, and the CRC-32C of p. Frames are
// not synced: a process that crashes leaves them in the page cache; a
// machine that crashes may leave a torn last frame, and a reader stops at
// the first frame that is short or fails its checksum. Any prefix of the
// changes is a state the server had, since they were applied in order.
const journalMagic = "OIJRNL\r\n"

// Op is what a journal change does.
type Op byte

// The ops.
const (
	// Put stores Change.Value under Change.Key.
	Put Op = iota + 1
	// Delete removes Change.Key.
	Delete
	// Progress moves the resourceVersion on without a change (a bookmark).
	Progress
)

// Change is one journal entry: the cache was at ResourceVersion after it.
type Change struct {
	Op              Op
	ResourceVersion string
	Key, Value      []byte
}

// maxFrame bounds a frame: a put's key, value and version.
const maxFrame = maxKey + maxValue + 1<<10

// JournalWriter appends to a journal. It is not safe for concurrent use.
type JournalWriter struct {
	path    string
	f       *os.File // nil for NewJournalWriter's
	buf     *bufio.Writer
	payload []byte
	err     error
	// headerEnd is the size of the magic, version and header frame; size
	// counts every byte written, buffered ones included.
	headerEnd, size int64
	// dirSynced says the journal's name is durable in its directory.
	dirSynced bool
}

// CreateJournal starts the journal at path (replacing any journal of
// ours there), following the snapshot whose header is h: a reader checks
// that it follows the snapshot it loaded. The caller starts it after that
// snapshot was committed. The file is made under a fresh name, its header
// written, then renamed to path (see files.go).
func CreateJournal(path string, h Header) (*JournalWriter, error) {
	if err := h.valid(); err != nil {
		return nil, err
	}
	f, err := createTemp(path)
	if err != nil {
		return nil, err
	}
	j := &JournalWriter{path: f.Name(), f: f}
	err = j.start(f, h)
	if err == nil {
		err = j.Rename(path)
	}
	if err != nil {
		f.Close()
		_ = os.Remove(j.path)
		return nil, err
	}
	return j, nil
}

// NewJournalWriter starts a journal written to dst (see CreateJournal);
// Close flushes it and closes nothing.
func NewJournalWriter(dst io.Writer, h Header) (*JournalWriter, error) {
	if err := h.valid(); err != nil {
		return nil, err
	}
	j := &JournalWriter{}
	if err := j.start(dst, h); err != nil {
		return nil, err
	}
	return j, nil
}

// start writes the magic, the version and the header's frame.
func (j *JournalWriter) start(dst io.Writer, h Header) error {
	j.buf = bufio.NewWriterSize(dst, writeBuffer)
	prelude := append([]byte(journalMagic), FormatVersion)
	_, j.err = j.buf.Write(prelude)
	j.size = int64(len(prelude))
	// The records of a journal read back with the dictionary of the
	// snapshot it follows, loaded first: its own copy would cost every
	// journal started tens of kilobytes.
	h.Dictionary = nil
	j.frame(appendHeader(nil, &h))
	j.headerEnd = j.size
	return j.Flush()
}

// ContinueJournal reopens the journal r has read to its end, to append
// after its last whole change: a torn or damaged frame after it is cut
// off first, so that the changes appended follow the ones a reader
// applies. r must have been opened by OpenJournal on path.
func ContinueJournal(path string, r *JournalReader) (*JournalWriter, error) {
	if !r.done {
		return nil, fmt.Errorf("snapshot: journal %s not read to its end", path)
	}
	f, err := openOwn(path, os.O_WRONLY)
	if err != nil {
		return nil, err
	}
	if err := sameFile(f, r.r.file); err != nil {
		f.Close()
		return nil, err
	}
	whole := r.whole
	if err := f.Truncate(whole); err != nil {
		f.Close()
		return nil, &Error{Reason: IOReason, Path: path, Err: err}
	}
	if _, err := f.Seek(whole, io.SeekStart); err != nil {
		f.Close()
		return nil, &Error{Reason: IOReason, Path: path, Err: err}
	}
	return &JournalWriter{path: path, f: f, buf: bufio.NewWriterSize(f, writeBuffer),
		headerEnd: r.headerEnd, size: whole, dirSynced: true}, nil
}

// ChangeBytes is the size of the changes written so far, the header left
// out: what a reader has to replay beyond the snapshot.
func (j *JournalWriter) ChangeBytes() int64 { return j.size - j.headerEnd }

// Put records that value was stored under key, making the cache's version rv.
func (j *JournalWriter) Put(rv, key string, value []byte) error {
	return j.change(Put, rv, key, value)
}

// Delete records that key was removed at rv.
func (j *JournalWriter) Delete(rv, key string) error { return j.change(Delete, rv, key, nil) }

// Progress records that the cache reached rv without a change.
func (j *JournalWriter) Progress(rv string) error { return j.change(Progress, rv, "", nil) }

func (j *JournalWriter) change(op Op, rv, key string, value []byte) error {
	if len(key) > maxKey || len(value) > maxValue {
		return fmt.Errorf("snapshot: journal change %q too large (%d bytes)", key, len(value))
	}
	p := append(j.payload[:0], byte(op))
	p = appendField(p, rv)
	if op != Progress {
		p = appendField(p, key)
	}
	if op == Put {
		p = appendField(p, value)
	}
	j.payload = p
	j.frame(p)
	return j.err
}

func appendField[B string | []byte](dst []byte, b B) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// frame writes one frame.
func (j *JournalWriter) frame(p []byte) {
	if j.err != nil {
		return
	}
	var n [binary.MaxVarintLen64]byte
	if _, err := j.buf.Write(binary.AppendUvarint(n[:0], uint64(len(p)))); err != nil {
		j.err = err
		return
	}
	if _, err := j.buf.Write(p); err != nil {
		j.err = err
		return
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc32.Checksum(p, castagnoli))
	_, j.err = j.buf.Write(sum[:])
	j.size += int64(uvarintLen(uint64(len(p))) + len(p) + len(sum))
}

func uvarintLen(v uint64) int {
	var n [binary.MaxVarintLen64]byte
	return len(binary.AppendUvarint(n[:0], v))
}

// Flush hands the buffered changes to the operating system, after which a
// crash of the process does not lose them. It does not sync.
func (j *JournalWriter) Flush() error {
	if j.err == nil {
		j.err = j.buf.Flush()
	}
	if j.err != nil {
		return &Error{Reason: IOReason, Path: j.path, Err: j.err}
	}
	return nil
}

// Sync flushes the journal and makes it durable: the file's data, and
// its name in its directory once. A journal that ends a process's run is
// synced, so that a machine's crash after the stop does not tear it.
func (j *JournalWriter) Sync() error {
	if err := j.Flush(); err != nil || j.f == nil {
		return err
	}
	if err := j.f.Sync(); err != nil {
		j.err = err
		return &Error{Reason: IOReason, Path: j.path, Err: err}
	}
	if !j.dirSynced {
		if err := syncDir(filepath.Dir(j.path)); err != nil {
			return err
		}
		j.dirSynced = true
	}
	return nil
}

// Rename moves the journal's file to path, where its changes go on being
// appended (its snapshot was committed there meanwhile, say).
func (j *JournalWriter) Rename(path string) error {
	if j.f == nil {
		return fmt.Errorf("snapshot: journal not written to a file")
	}
	if err := renameOwn(j.path, path); err != nil {
		return err
	}
	j.path, j.dirSynced = path, false
	return nil
}

// Close flushes and closes the journal.
func (j *JournalWriter) Close() error {
	err := j.Flush()
	if j.f == nil {
		return err
	}
	if cerr := j.f.Close(); err == nil && cerr != nil {
		err = &Error{Reason: IOReason, Path: j.path, Err: cerr}
	}
	return err
}

// sameFile checks that f is the file read, which a rename may have
// replaced at its name since.
func sameFile(f, read *os.File) error {
	if read == nil {
		return fmt.Errorf("snapshot: journal %s was not opened by OpenJournal", f.Name())
	}
	a, err := f.Stat()
	if err != nil {
		return &Error{Reason: IOReason, Path: f.Name(), Err: err}
	}
	b, err := read.Stat()
	if err != nil {
		return &Error{Reason: IOReason, Path: f.Name(), Err: err}
	}
	if !os.SameFile(a, b) {
		return &Error{Reason: UnsafeReason, Path: f.Name(), Detail: "replaced since it was read"}
	}
	return nil
}

// JournalReader reads a journal's changes in order.
type JournalReader struct {
	r    *Reader
	buf  []byte
	torn error
	done bool
	// headerEnd and whole are where the header frame and the last whole
	// frame read end.
	headerEnd, whole int64
	// prev is where the last change returned ends: a frame whose checksum
	// matched but whose change does not parse is not whole.
	prev int64
}

// OpenJournal opens the journal at path and checks that it follows the
// snapshot whose header is snapshot (unless nil): the same identity and
// resourceVersion.
// A journal that does not is refused (MismatchReason, field "snapshot
// resource version"), as is a missing one (MissingReason).
func OpenJournal(path string, snapshot *Header) (*JournalReader, error) {
	return openFile(path, func(f *os.File, size int64) (*JournalReader, error) {
		j, err := newJournalReader(path, f, size, snapshot)
		if err == nil {
			j.r.file = f
		}
		return j, err
	})
}

// NewJournalReader reads a journal of size bytes (-1 if unknown) from src
// (see OpenJournal).
func NewJournalReader(src io.Reader, size int64, snapshot *Header) (*JournalReader, error) {
	return newJournalReader("", src, size, snapshot)
}

func newJournalReader(path string, src io.Reader, size int64, snapshot *Header) (*JournalReader, error) {
	j := &JournalReader{r: &Reader{path: path, br: bufio.NewReaderSize(src, readBuffer), left: size}}
	if err := j.r.readMagic(journalMagic); err != nil {
		return nil, err
	}
	raw, ok, err := j.frame()
	switch {
	case err != nil:
		return nil, err
	case j.torn != nil:
		return nil, j.torn
	case !ok:
		return nil, j.r.refuse(TruncatedReason, "no journal header")
	}
	if err := j.r.parseHeader(bytes.Clone(raw)); err != nil {
		return nil, err
	}
	if len(j.r.header.Dictionary) > 0 {
		return nil, j.r.refuse(CorruptReason, "a journal header keeps no dictionary")
	}
	j.headerEnd, j.prev = j.whole, j.whole
	if snapshot == nil {
		return j, nil
	}
	if err := j.r.check(snapshot); err != nil {
		return nil, err
	}
	if got := j.r.header.ResourceVersion; got != snapshot.ResourceVersion {
		return nil, &Error{Reason: MismatchReason, Path: path, Field: "snapshot resource version", Got: got, Want: snapshot.ResourceVersion}
	}
	return j, nil
}

// Next returns the next change; its slices are valid until the next call.
// At the end of the journal, or at a torn or damaged frame, it returns
// io.EOF: Torn then says whether the end was a damaged frame.
func (j *JournalReader) Next() (Change, error) {
	if j.done {
		return Change{}, io.EOF
	}
	p, ok, err := j.frame()
	if err != nil {
		return Change{}, err
	}
	if !ok {
		j.done = true
		return Change{}, io.EOF
	}
	c, ok := parseChange(p)
	if !ok {
		j.torn = j.r.refuse(CorruptReason, "malformed change")
		j.whole = j.prev
		j.done = true
		return Change{}, io.EOF
	}
	j.prev = j.whole
	return c, nil
}

// Header returns the header of the snapshot the journal follows.
func (j *JournalReader) Header() Header { return j.r.header }

// Torn returns why the journal ended early, nil if it ended cleanly.
func (j *JournalReader) Torn() error { return j.torn }

// Close closes the file OpenJournal opened.
func (j *JournalReader) Close() error { return j.r.Close() }

// frame reads one frame's payload: ok is false at the clean end (no byte
// left) and at a torn or damaged frame, recorded in j.torn; err is an I/O
// failure.
func (j *JournalReader) frame() (p []byte, ok bool, err error) {
	r := j.r
	if _, err := r.br.Peek(1); err == io.EOF {
		return nil, false, nil
	}
	if j.buf, err = r.bytes(j.buf, maxFrame, "frame"); err != nil {
		return nil, false, j.stop(err)
	}
	var sum [4]byte
	if err := r.full(sum[:]); err != nil {
		return nil, false, j.stop(err)
	}
	if binary.LittleEndian.Uint32(sum[:]) != crc32.Checksum(j.buf, castagnoli) {
		return nil, false, j.stop(r.refuse(CorruptReason, "frame checksum"))
	}
	j.whole = r.read
	return j.buf, true, nil
}

// stop records a frame that ends the journal early, or passes an I/O error on.
func (j *JournalReader) stop(err error) error {
	if ReasonOf(err) == IOReason {
		return err
	}
	j.torn = err
	return nil
}

func parseChange(p []byte) (Change, bool) {
	if len(p) == 0 {
		return Change{}, false
	}
	c := Change{Op: Op(p[0])}
	h := headerParser{raw: p[1:]}
	c.ResourceVersion = string(h.field())
	switch c.Op {
	case Put:
		c.Key, c.Value = h.field(), h.field()
	case Delete:
		c.Key = h.field()
	case Progress:
	default:
		return Change{}, false
	}
	return c, !h.bad && len(h.raw) == 0 && c.ResourceVersion != ""
}
