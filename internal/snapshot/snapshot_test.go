package snapshot

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testHeader(count int) Header {
	return Header{
		Resource:        "/v1, Resource=pods",
		Namespace:       "team-01",
		LabelSelector:   "app=web",
		FieldSelector:   "spec.nodeName=node-1",
		Shard:           "shardRange(object.metadata.uid, '0x0', '0x8')",
		Encoding:        "compact/protobuf",
		Dictionary:      []byte("dict"),
		ResourceVersion: "12345",
		WrittenAt:       time.Unix(1700000000, 42),
		Count:           count,
	}
}

type record struct{ key, value string }

func testRecords(n int) []record {
	out := make([]record, n)
	for i := range out {
		out[i] = record{fmt.Sprintf("ns-%d/pod-%05d", i%3, i), fmt.Sprintf("value %d %s", i, bytes.Repeat([]byte{byte(i)}, i))}
	}
	return out
}

// writeFile writes a snapshot of recs to dir/snap and returns its path.
func writeFile(t testing.TB, dir string, h Header, recs []record) string {
	t.Helper()
	path := filepath.Join(dir, "snap")
	w, err := Create(path, h)
	require.NoError(t, err)
	for _, r := range recs {
		require.NoError(t, w.Add(r.key, []byte(r.value)))
	}
	require.NoError(t, w.Commit())
	return path
}

// readAll reads every record, returning the error Next ends with (nil for
// io.EOF).
func readAll(r *Reader) ([]record, error) {
	var out []record
	for {
		k, v, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, record{string(k), string(v)})
	}
}

func TestRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 50} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			h, recs := testHeader(n), testRecords(n)
			path := writeFile(t, t.TempDir(), h, recs)
			r, err := Open(path, &h)
			require.NoError(t, err)
			defer r.Close()
			got := r.Header()
			assert.True(t, got.WrittenAt.Equal(h.WrittenAt))
			got.WrittenAt = h.WrittenAt
			assert.Equal(t, h, got)
			read, err := readAll(r)
			require.NoError(t, err)
			if n == 0 {
				assert.Empty(t, read)
			} else {
				assert.Equal(t, recs, read)
			}
			_, _, err = r.Next()
			assert.Equal(t, io.EOF, err, "Next keeps answering io.EOF")
		})
	}
}

func TestMissingReason(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "absent"), nil)
	assert.Equal(t, MissingReason, ReasonOf(err))
}

func TestNotSnapshotReason(t *testing.T) {
	for _, data := range []string{"", "OIS", "{\"kind\":\"PodList\"}", "OISNAP\n\n"} {
		_, err := NewReader(bytes.NewReader([]byte(data)), int64(len(data)), nil)
		assert.Equal(t, NotSnapshotReason, ReasonOf(err), "%q: %v", data, err)
	}
}

func TestFormatVersionReason(t *testing.T) {
	data := fileBytes(t, testHeader(1), testRecords(1))
	data[len(magic)] = FormatVersion + 1
	_, err := NewReader(bytes.NewReader(data), int64(len(data)), nil)
	require.Equal(t, FormatVersionReason, ReasonOf(err))
	assert.Contains(t, err.Error(), fmt.Sprintf(`format version is "%d", want "%d"`, FormatVersion+1, FormatVersion))
}

func TestMismatchReasonNamesTheField(t *testing.T) {
	data := fileBytes(t, testHeader(1), testRecords(1))
	cases := map[string]func(*Header){
		"resource":       func(h *Header) { h.Resource = "apps/v1, Resource=deployments" },
		"namespace":      func(h *Header) { h.Namespace = "" },
		"label selector": func(h *Header) { h.LabelSelector = "app=db" },
		"field selector": func(h *Header) { h.FieldSelector = "" },
		"shard":          func(h *Header) { h.Shard = "" },
		"encoding":       func(h *Header) { h.Encoding = "compact/cbor" },
		"cluster":        func(h *Header) { h.Cluster = "another" },
	}
	for field, change := range cases {
		want := testHeader(1)
		change(&want)
		_, err := NewReader(bytes.NewReader(data), int64(len(data)), &want)
		var e *Error
		require.ErrorAs(t, err, &e, field)
		assert.Equal(t, MismatchReason, e.Reason)
		assert.Equal(t, field, e.Field)
	}
	// Neither the version, the time, the count nor the dictionary is compared.
	want := Header{Resource: "/v1, Resource=pods", Namespace: "team-01", LabelSelector: "app=web",
		FieldSelector: "spec.nodeName=node-1", Shard: testHeader(0).Shard, Encoding: "compact/protobuf"}
	_, err := NewReader(bytes.NewReader(data), int64(len(data)), &want)
	assert.NoError(t, err)
}

// TestTruncatedReason cuts a file at every length: each is refused, never
// read as a valid snapshot with fewer records.
func TestTruncatedReason(t *testing.T) {
	data := fileBytes(t, testHeader(5), testRecords(5))
	for n := len(magic); n < len(data); n++ {
		for _, size := range []int64{int64(n), -1} {
			err := readBytes(data[:n], size)
			assert.Equal(t, TruncatedReason, ReasonOf(err), "cut at %d of %d, size %d: %v", n, len(data), size, err)
		}
	}
}

// TestCorruptReason flips each byte after the format version in turn: the
// file is refused, as corrupt, truncated (a length now points past the end)
// or as another scope when the byte is in the header.
func TestCorruptReason(t *testing.T) {
	data := fileBytes(t, testHeader(5), testRecords(5))
	for i := len(magic) + 1; i < len(data); i++ {
		c := bytes.Clone(data)
		c[i] ^= 0x40
		err := readBytes(c, int64(len(c)))
		require.Error(t, err, "byte %d flipped", i)
		assert.Contains(t, []Reason{CorruptReason, TruncatedReason, MismatchReason}, ReasonOf(err), "byte %d: %v", i, err)
	}
	err := readBytes(append(bytes.Clone(data), 0), int64(len(data)+1))
	assert.Equal(t, CorruptReason, ReasonOf(err))
	assert.Contains(t, err.Error(), "data after the trailer")
}

func TestIOReason(t *testing.T) {
	data := fileBytes(t, testHeader(5), testRecords(5))
	r, err := NewReader(io.MultiReader(bytes.NewReader(data[:40]), failingReader{}), int64(len(data)), nil)
	if err == nil {
		_, err = readAll(r)
	}
	assert.Equal(t, IOReason, ReasonOf(err))
	assert.ErrorIs(t, err, errDisk)
}

var errDisk = fmt.Errorf("disk on fire")

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errDisk }

func TestWriterRefusesAWrongCountAndLeavesThePreviousFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, testHeader(1), testRecords(1))
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	w, err := Create(path, testHeader(2))
	require.NoError(t, err)
	require.NoError(t, w.Add("a", nil))
	assert.Error(t, w.Commit(), "one record short")

	w, err = Create(path, testHeader(1))
	require.NoError(t, err)
	require.NoError(t, w.Add("a", nil))
	assert.Error(t, w.Add("b", nil), "one record over")
	assert.Error(t, w.Commit())

	w, err = Create(path, testHeader(1))
	require.NoError(t, err)
	w.Abort()

	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

func TestWriterRefusesAHeaderWithoutVersion(t *testing.T) {
	h := testHeader(0)
	h.ResourceVersion = ""
	_, err := Create(filepath.Join(t.TempDir(), "snap"), h)
	assert.Error(t, err)
}

// fileBytes is the snapshot of recs, written to memory.
func fileBytes(t testing.TB, h Header, recs []record) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	require.NoError(t, err)
	for _, r := range recs {
		require.NoError(t, w.Add(r.key, []byte(r.value)))
	}
	require.NoError(t, w.Commit())
	return buf.Bytes()
}

func TestNewWriterWritesWhatCreateDoes(t *testing.T) {
	h, recs := testHeader(7), testRecords(7)
	data, err := os.ReadFile(writeFile(t, t.TempDir(), h, recs))
	require.NoError(t, err)
	assert.Equal(t, data, fileBytes(t, h, recs))

	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	require.NoError(t, err)
	assert.Error(t, w.Commit(), "seven records short")
}

func readBytes(data []byte, size int64) error {
	r, err := NewReader(bytes.NewReader(data), size, nil)
	if err != nil {
		return err
	}
	_, err = readAll(r)
	return err
}

// TestAllocationsDoNotGrowWithRecords pins the cost per record at zero
// allocations, writing and reading: what a snapshot costs is the buffers.
func TestAllocationsDoNotGrowWithRecords(t *testing.T) {
	dir := t.TempDir()
	allocs := func(n int) (write, read float64) {
		recs := testRecords(n)
		values := make([][]byte, n)
		for i := range recs {
			values[i] = bytes.Repeat([]byte{byte(i)}, 100)
		}
		h := testHeader(n)
		path := filepath.Join(dir, "snap")
		write = testing.AllocsPerRun(5, func() {
			w, err := Create(path, h)
			require.NoError(t, err)
			for i, r := range recs {
				require.NoError(t, w.Add(r.key, values[i]))
			}
			require.NoError(t, w.Commit())
		})
		read = testing.AllocsPerRun(5, func() {
			r, err := Open(path, &h)
			require.NoError(t, err)
			_, err = drain(r)
			require.NoError(t, err)
			r.Close()
		})
		return write, read
	}
	w10, r10 := allocs(10)
	w1000, r1000 := allocs(1000)
	assert.Equal(t, w10, w1000, "writing")
	assert.Equal(t, r10, r1000, "reading")
}

// drain reads every record without keeping any.
func drain(r *Reader) (int, error) {
	n := 0
	for {
		_, _, err := r.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}
