package snapshot

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withUmask runs f under umask mask. The umask is the process's: tests of
// this package do not run in parallel.
func withUmask(t *testing.T, mask int, f func()) {
	t.Helper()
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

func perm(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Lstat(path)
	require.NoError(t, err)
	return st.Mode().Perm()
}

// Every file made is 0600 whatever the umask: the snapshot, a new journal,
// a journal renamed beside its snapshot, the lock (issue 39 item 1: the
// journal was 0644).
func TestFilesAre0600WhateverTheUmask(t *testing.T) {
	for _, mask := range []int{0, 0o022, 0o077} {
		withUmask(t, mask, func() {
			dir := t.TempDir()
			path := writeFile(t, dir, testHeader(3), testRecords(3))
			assert.Equal(t, os.FileMode(0o600), perm(t, path), "umask %04o", mask)
			j, err := CreateJournal(path+".journal.next", testHeader(3))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), perm(t, path+".journal.next"), "umask %04o", mask)
			require.NoError(t, j.Rename(path+".journal"))
			require.NoError(t, j.Close())
			assert.Equal(t, os.FileMode(0o600), perm(t, path+".journal"), "umask %04o", mask)
			l, err := TryLock(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), perm(t, LockPath(path)), "umask %04o", mask)
			require.NoError(t, l.Unlock())
		})
	}
}

// plantLink makes name a link to a victim file holding secret, and
// returns a check that the victim is untouched.
func plantLink(t *testing.T, name string) func() {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("secret"), 0o600))
	require.NoError(t, os.Symlink(victim, name))
	return func() {
		t.Helper()
		got, err := os.ReadFile(victim)
		require.NoError(t, err)
		assert.Equal(t, "secret", string(got), "the link's target was written through")
		st, err := os.Lstat(name)
		if err == nil {
			assert.Equal(t, os.ModeSymlink, st.Mode().Type(), "%s replaced", name)
		}
	}
}

// No name is written, truncated, read or replaced through a link planted
// in the directory (issue 39 item 2: a link at the journal's names was
// truncated and written through).
func TestLinksAreNeverFollowed(t *testing.T) {
	h := testHeader(3)
	t.Run("new journal", func(t *testing.T) {
		name := filepath.Join(t.TempDir(), "snap.journal.next")
		untouched := plantLink(t, name)
		_, err := CreateJournal(name, h)
		assert.Equal(t, UnsafeReason, ReasonOf(err), "%v", err)
		untouched()
	})
	t.Run("journal renamed", func(t *testing.T) {
		dir := t.TempDir()
		untouched := plantLink(t, filepath.Join(dir, "snap.journal"))
		j, err := CreateJournal(filepath.Join(dir, "snap.journal.next"), h)
		require.NoError(t, err)
		assert.Equal(t, UnsafeReason, ReasonOf(j.Rename(filepath.Join(dir, "snap.journal"))))
		require.NoError(t, j.Close())
		untouched()
	})
	t.Run("journal read and continued", func(t *testing.T) {
		name := filepath.Join(t.TempDir(), "snap.journal")
		untouched := plantLink(t, name)
		_, err := OpenJournal(name, &h)
		assert.Equal(t, UnsafeReason, ReasonOf(err), "%v", err)
		untouched()
	})
	t.Run("snapshot committed", func(t *testing.T) {
		dir := t.TempDir()
		untouched := plantLink(t, filepath.Join(dir, "snap"))
		w, err := Create(filepath.Join(dir, "snap"), testHeader(0))
		require.NoError(t, err)
		assert.Equal(t, UnsafeReason, ReasonOf(w.Commit()))
		untouched()
		assertOnly(t, dir, "snap")
	})
	t.Run("snapshot read", func(t *testing.T) {
		dir := t.TempDir()
		path := writeFile(t, dir, h, testRecords(3))
		require.NoError(t, os.Rename(path, path+".real"))
		require.NoError(t, os.Symlink(path+".real", path))
		_, err := Open(path, &h)
		assert.Equal(t, UnsafeReason, ReasonOf(err), "%v", err)
	})
	t.Run("lock", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "snap")
		untouched := plantLink(t, LockPath(path))
		_, err := TryLock(path)
		assert.Equal(t, UnsafeReason, ReasonOf(err), "%v", err)
		untouched()
	})
}

// A journal whose name was replaced between its read and its continuation
// is not appended to.
func TestContinueJournalRefusesAReplacedFile(t *testing.T) {
	h := testHeader(3)
	path := filepath.Join(t.TempDir(), "snap.journal")
	j, err := CreateJournal(path, h)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	r, err := OpenJournal(path, &h)
	require.NoError(t, err)
	defer r.Close()
	_, err = r.Next()
	require.ErrorIs(t, err, io.EOF)
	other, err := CreateJournal(path+".other", h)
	require.NoError(t, err)
	require.NoError(t, other.Rename(path))
	require.NoError(t, other.Close())
	_, err = ContinueJournal(path, r)
	assert.Equal(t, UnsafeReason, ReasonOf(err), "%v", err)
}

// A file this package could not have made (a mode wider than 0600, another
// user's, not a regular file) is neither read nor replaced.
func TestFilesNotOursAreRefused(t *testing.T) {
	h := testHeader(3)
	t.Run("mode", func(t *testing.T) {
		path := writeFile(t, t.TempDir(), h, testRecords(3))
		require.NoError(t, os.Chmod(path, 0o644))
		_, err := Open(path, &h)
		assert.Equal(t, UnsafeReason, ReasonOf(err), "%v", err)
		w, err := Create(path, h)
		require.NoError(t, err)
		for _, r := range testRecords(3) {
			require.NoError(t, w.Add(r.key, []byte(r.value)))
		}
		assert.Equal(t, UnsafeReason, ReasonOf(w.Commit()))
	})
	t.Run("owner", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a file away")
		}
		path := writeFile(t, t.TempDir(), h, testRecords(3))
		require.NoError(t, os.Chown(path, 4242, 4242))
		_, err := Open(path, &h)
		assert.Equal(t, UnsafeReason, ReasonOf(err), "%v", err)
		assert.Contains(t, err.Error(), "owned by uid 4242")
	})
	t.Run("directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "snap")
		require.NoError(t, os.Mkdir(path, 0o700))
		_, err := Open(path, &h)
		assert.Equal(t, UnsafeReason, ReasonOf(err), "%v", err)
	})
}

// A path is locked by one holder at a time, in one process (two opens of
// the lock file) as across processes; Unlock frees it.
func TestLockIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	l, err := TryLock(path)
	require.NoError(t, err)
	_, err = TryLock(path)
	require.ErrorIs(t, err, ErrLocked)
	assert.Contains(t, err.Error(), "in use by another informer or process")
	require.NoError(t, l.Unlock())
	l, err = TryLock(path)
	require.NoError(t, err)
	require.NoError(t, l.Unlock())
}

// assertOnly checks that dir holds exactly names.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	assert.ElementsMatch(t, names, got)
}

// RemoveLeftovers removes the temporary files of crashed saves and an
// uncommitted journal of this path only: links by themselves, never their
// targets; nobody else's files (issue 39 item 5).
func TestRemoveLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, testHeader(3), testRecords(3))
	for _, name := range []string{".snap.tmp-1", ".snap.tmp-22", "snap.journal.next", "snap.journal", ".other.tmp-1", "snap.tmp-3", "snapx"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600))
	}
	untouched := plantLink(t, filepath.Join(dir, ".snap.tmp-link"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".snap.tmp-wide"), []byte("x"), 0o644))
	removed, err := RemoveLeftovers(path, path+".journal.next")
	assert.Equal(t, UnsafeReason, ReasonOf(err), "the 0644 file is not ours: %v", err)
	for i := range removed {
		removed[i] = filepath.Base(removed[i])
	}
	assert.ElementsMatch(t, []string{".snap.tmp-1", ".snap.tmp-22", "snap.journal.next", ".snap.tmp-link"}, removed)
	assertOnly(t, dir, "snap", "snap.journal", ".other.tmp-1", "snap.tmp-3", "snapx", ".snap.tmp-wide")
	untouched()
}

func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	assert.NoError(t, CheckDir(dir))
	assert.ErrorContains(t, CheckDir(""), "empty")
	assert.ErrorIs(t, CheckDir(filepath.Join(dir, "absent")), os.ErrNotExist)
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	assert.ErrorContains(t, CheckDir(file), "not a directory")
}

// No refusal's text holds bytes of the file: not of a file that is not a
// snapshot, nor of a header damaged anywhere (issue 39 item 4).
func TestErrorsHoldNoFileBytes(t *testing.T) {
	const marker = "S3CRET"
	data := []byte("OISNAP\r\n" + strings.Repeat(marker, 3))
	_, err := NewReader(bytes.NewReader(data), int64(len(data)), nil)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "S3C")
	_, err = NewReader(bytes.NewReader([]byte(marker+"AB")), 8, nil)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "S3C")

	h := testHeader(1)
	h.Dictionary = []byte(strings.Repeat(marker, 20))
	good := fileBytes(t, h, []record{{"ns/a", strings.Repeat(marker, 50)}})
	for i := len(magic) + 1; i < len(good); i++ {
		for _, flip := range []byte{0x01, 0x40, 0xff} {
			c := bytes.Clone(good)
			c[i] ^= flip
			r, err := NewReader(bytes.NewReader(c), int64(len(c)), &h)
			if err == nil {
				_, err = readAll(r)
			}
			var e *Error
			if errors.As(err, &e) && e.Reason == MismatchReason {
				t.Fatalf("byte %d: a damaged header compared: %v", i, err)
			}
			if err != nil {
				assert.NotContains(t, err.Error(), "S3C", "byte %d", i)
			}
		}
	}
}
