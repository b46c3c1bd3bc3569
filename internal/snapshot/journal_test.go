package snapshot

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type change struct {
	op             Op
	rv, key, value string
}

func testChanges() []change {
	return []change{
		{Put, "101", "ns/a", "a v2"},
		{Delete, "102", "ns/b", ""},
		{Progress, "110", "", ""},
		{Put, "111", "ns/c", string(bytes.Repeat([]byte("c"), 300))},
	}
}

// journalBytes writes changes after the snapshot h to memory.
func journalBytes(t testing.TB, h Header, changes []change) []byte {
	var buf bytes.Buffer
	j, err := NewJournalWriter(&buf, h)
	require.NoError(t, err)
	for _, c := range changes {
		switch c.op {
		case Put:
			require.NoError(t, j.Put(c.rv, c.key, []byte(c.value)))
		case Delete:
			require.NoError(t, j.Delete(c.rv, c.key))
		case Progress:
			require.NoError(t, j.Progress(c.rv))
		}
	}
	require.NoError(t, j.Close())
	return buf.Bytes()
}

// readJournal reads data's changes until io.EOF.
func readJournal(data []byte, h *Header) ([]change, *JournalReader, error) {
	j, err := NewJournalReader(bytes.NewReader(data), int64(len(data)), h)
	if err != nil {
		return nil, nil, err
	}
	out := []change{}
	for {
		c, err := j.Next()
		if err == io.EOF {
			return out, j, nil
		}
		if err != nil {
			return out, j, err
		}
		out = append(out, change{c.Op, c.ResourceVersion, string(c.Key), string(c.Value)})
	}
}

func TestJournalRoundTrip(t *testing.T) {
	h := testHeader(3)
	got, j, err := readJournal(journalBytes(t, h, testChanges()), &h)
	require.NoError(t, err)
	assert.Equal(t, testChanges(), got)
	assert.NoError(t, j.Torn())
	assert.Equal(t, "12345", j.Header().ResourceVersion)
}

// A journal cut anywhere after its header yields a prefix of its changes:
// a state the server had.
func TestJournalCutYieldsAPrefix(t *testing.T) {
	h, changes := testHeader(3), testChanges()
	data := journalBytes(t, h, changes)
	header := len(journalBytes(t, h, nil))
	for n := header; n <= len(data); n++ {
		got, j, err := readJournal(data[:n], &h)
		require.NoError(t, err, "cut at %d", n)
		require.Equal(t, changes[:len(got)], got, "cut at %d", n)
		if len(got) < len(changes) && n != len(journalBytes(t, h, changes[:len(got)])) {
			assert.Equal(t, TruncatedReason, ReasonOf(j.Torn()), "cut at %d", n)
		}
	}
	for n := len(journalMagic); n < header; n++ {
		_, _, err := readJournal(data[:n], &h)
		assert.Equal(t, TruncatedReason, ReasonOf(err), "cut in the header at %d", n)
	}
}

// A damaged frame ends the journal there: the changes before it are kept.
func TestJournalDamageStopsAtTheFrame(t *testing.T) {
	h, changes := testHeader(3), testChanges()
	data := journalBytes(t, h, changes)
	header := len(journalBytes(t, h, nil))
	for i := header; i < len(data); i++ {
		c := bytes.Clone(data)
		c[i] ^= 0x20
		got, j, err := readJournal(c, &h)
		require.NoError(t, err, "byte %d", i)
		require.Equal(t, changes[:len(got)], got, "byte %d", i)
		assert.Less(t, len(got), len(changes), "byte %d: the damaged frame was read", i)
		assert.Error(t, j.Torn(), "byte %d", i)
	}
}

func TestJournalOfAnotherSnapshotIsRefused(t *testing.T) {
	h := testHeader(3)
	data := journalBytes(t, h, testChanges())
	later := h
	later.ResourceVersion = "12400"
	_, _, err := readJournal(data, &later)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, MismatchReason, e.Reason)
	assert.Equal(t, "snapshot resource version", e.Field)

	other := h
	other.Shard = ""
	_, _, err = readJournal(data, &other)
	assert.Equal(t, MismatchReason, ReasonOf(err))

	_, _, err = readJournal(fileBytes(t, testHeader(0), nil), &h)
	assert.Equal(t, NotSnapshotReason, ReasonOf(err), "a snapshot is not a journal")

	_, err = OpenJournal(filepath.Join(t.TempDir(), "absent"), &h)
	assert.Equal(t, MissingReason, ReasonOf(err))
}

// A journal file holds what NewJournalWriter writes; OpenJournal reads it.
func TestJournalFile(t *testing.T) {
	h := testHeader(3)
	path := filepath.Join(t.TempDir(), "journal")
	w, err := CreateJournal(path, h)
	require.NoError(t, err)
	for _, c := range testChanges()[:2] {
		if c.op == Put {
			require.NoError(t, w.Put(c.rv, c.key, []byte(c.value)))
		} else {
			require.NoError(t, w.Delete(c.rv, c.key))
		}
	}
	require.NoError(t, w.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, journalBytes(t, h, testChanges()[:2]), data)

	require.NotEmpty(t, h.Dictionary)
	j, err := OpenJournal(path, &h)
	require.NoError(t, err, "follows the snapshot, whose header keeps the dictionary")
	assert.Empty(t, j.Header().Dictionary, "the journal's own header does not")
	c, err := j.Next()
	require.NoError(t, err)
	assert.Equal(t, "ns/a", string(c.Key))
	require.NoError(t, j.Close())
}

// FuzzJournalReader: arbitrary bytes are refused or read to an end, never
// a panic, and what is read is what a JournalWriter writes. Seeds are in
// testdata/fuzz/FuzzJournalReader.
func FuzzJournalReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		got, j, err := readJournal(data, nil)
		if err != nil {
			if ReasonOf(err) == 0 {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if j.Torn() != nil {
			return
		}
		if again := journalBytes(t, j.Header(), got); !bytes.Equal(again, data) {
			t.Fatalf("accepted a journal a JournalWriter does not write:\n%q\nrewritten:\n%q", data, again)
		}
	})
}

// writeChanges appends changes to w.
func writeChanges(t *testing.T, w *JournalWriter, changes []change) {
	for _, c := range changes {
		switch c.op {
		case Put:
			require.NoError(t, w.Put(c.rv, c.key, []byte(c.value)))
		case Delete:
			require.NoError(t, w.Delete(c.rv, c.key))
		case Progress:
			require.NoError(t, w.Progress(c.rv))
		}
	}
}

// A journal continued after it was read, cut anywhere (a torn last frame
// or a damaged one), holds the changes read and then the ones appended,
// as if written in one go: the tear is cut off, never read between them.
// ChangeBytes counts what a reader replays; Sync leaves a readable file.
func TestContinueJournalAfterItsLastWholeChange(t *testing.T) {
	h, changes := testHeader(3), testChanges()
	whole := journalBytes(t, h, changes)
	header := len(journalBytes(t, h, nil))
	more := []change{{Delete, "120", "ns/a", ""}, {Put, "121", "ns/d", "d"}}
	for n := header; n <= len(whole); n++ {
		for _, damage := range []bool{false, true} {
			data := bytes.Clone(whole[:n])
			if damage && n > header {
				data[n-1] ^= 0x20
			}
			path := filepath.Join(t.TempDir(), "journal")
			require.NoError(t, os.WriteFile(path, data, 0o600))
			r, err := OpenJournal(path, &h)
			require.NoError(t, err)
			_, err = ContinueJournal(path, r)
			require.Error(t, err, "not read to its end")
			var read []change
			for {
				c, err := r.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				read = append(read, change{c.Op, c.ResourceVersion, string(c.Key), string(c.Value)})
			}
			w, err := ContinueJournal(path, r)
			require.NoError(t, err, "cut at %d", n)
			require.NoError(t, r.Close())
			kept := int64(len(journalBytes(t, h, read)) - header)
			assert.Equal(t, kept, w.ChangeBytes(), "cut at %d", n)
			writeChanges(t, w, more)
			require.NoError(t, w.Sync())
			require.NoError(t, w.Close())
			all := append(slices.Clone(read), more...)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, journalBytes(t, h, all), got, "cut at %d, damaged %v", n, damage)
		}
	}
}

// A journal renamed while written goes on at its new path.
func TestJournalRename(t *testing.T) {
	h, changes := testHeader(3), testChanges()
	dir := t.TempDir()
	w, err := CreateJournal(filepath.Join(dir, "next"), h)
	require.NoError(t, err)
	writeChanges(t, w, changes[:2])
	require.NoError(t, w.Rename(filepath.Join(dir, "journal")))
	writeChanges(t, w, changes[2:])
	assert.Equal(t, int64(len(journalBytes(t, h, changes))-len(journalBytes(t, h, nil))), w.ChangeBytes())
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
	got, err := os.ReadFile(filepath.Join(dir, "journal"))
	require.NoError(t, err)
	assert.Equal(t, journalBytes(t, h, changes), got)
	assert.NoFileExists(t, filepath.Join(dir, "next"))
}
