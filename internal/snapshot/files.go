package snapshot

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A snapshot and its journal are copies of cluster data, Secrets included,
// in a directory other users, containers or volumes may also reach. Every
// name this package writes, opens for writing or removes is therefore
// handled so that nobody else's file is ever read as ours, written through
// or replaced:
//
//   - a new file is created exclusively (O_EXCL) under a fresh temporary
//     name, mode 0600 whatever the umask, and renamed into place; a rename
//     never follows a link at its destination;
//   - an existing file is opened without following a link (O_NOFOLLOW)
//     and used only if it is a regular file of ours (ownFile);
//   - a name is replaced or removed only after Lstat showed a regular file
//     of ours there.
//
// A directory others can write to still lets them delete our files (the
// next start is then cold) but not make us read or write theirs; the
// documentation asks for a directory of our own (docs/RESTART.md).

// fileMode is the mode of every file this package creates.
const fileMode = 0o600

// tmpPattern is the os.CreateTemp pattern of path's temporary files.
func tmpPattern(path string) string { return "." + filepath.Base(path) + ".tmp-*" }

// isTmpOf reports whether name (a base name in path's directory) is one of
// path's temporary files.
func isTmpOf(path, name string) bool {
	return strings.HasPrefix(name, "."+filepath.Base(path)+".tmp-")
}

// createTemp creates a fresh temporary file beside path, exclusively and
// with mode 0600.
func createTemp(path string) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), tmpPattern(path))
	if err != nil {
		return nil, &Error{Reason: IOReason, Path: path, Err: err}
	}
	// CreateTemp asks for 0600, which a umask only narrows; the explicit
	// chmod states the mode in one place.
	if err := f.Chmod(fileMode); err != nil {
		f.Close()
		_ = os.Remove(f.Name())
		return nil, &Error{Reason: IOReason, Path: path, Err: err}
	}
	return f, nil
}

// openOwn opens path with flag, never through a link, and returns it only
// if it is a regular file of ours: owned by this process's user and
// accessible to no one else, as every file this package creates.
func openOwn(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &Error{Reason: MissingReason, Path: path}
	case isLinkError(err):
		return nil, &Error{Reason: UnsafeReason, Path: path, Detail: "a symbolic link"}
	case err != nil:
		return nil, &Error{Reason: IOReason, Path: path, Err: err}
	}
	st, err := f.Stat()
	if err == nil {
		err = ownFile(path, st)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// isLinkError reports the error of opening a link with O_NOFOLLOW.
func isLinkError(err error) bool { return errors.Is(err, syscall.ELOOP) }

// ownFile checks that st, the file at path, is a regular file that this
// package could have made: owned by this process's user, mode 0600 or
// narrower.
func ownFile(path string, st fs.FileInfo) error {
	if !st.Mode().IsRegular() {
		return &Error{Reason: UnsafeReason, Path: path, Detail: fmt.Sprintf("not a regular file (%v)", st.Mode().Type())}
	}
	if uid, ok := fileOwner(st); ok && uid != os.Geteuid() {
		return &Error{Reason: UnsafeReason, Path: path, Detail: fmt.Sprintf("owned by uid %d, not %d", uid, os.Geteuid())}
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return &Error{Reason: UnsafeReason, Path: path, Detail: fmt.Sprintf("mode %04o, not 0600", perm)}
	}
	return nil
}

// replaceable checks that path is absent or a file of ours that a rename
// may replace.
func replaceable(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &Error{Reason: IOReason, Path: path, Err: err}
	}
	return ownFile(path, st)
}

// renameOwn moves the file from, of ours, to path, if path may be replaced.
func renameOwn(from, path string) error {
	if err := replaceable(path); err != nil {
		return err
	}
	if err := os.Rename(from, path); err != nil {
		return &Error{Reason: IOReason, Path: path, Err: err}
	}
	return nil
}

// CheckDir checks that dir, where snapshots are to be saved, names an
// existing directory: a missing one is refused when the options are made,
// not found at every save.
func CheckDir(dir string) error {
	if dir == "" {
		return errors.New("snapshot directory is empty")
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("snapshot directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("snapshot directory %s is not a directory", dir)
	}
	return nil
}

// RemoveLeftovers removes what saves of the snapshot at path left behind
// when they crashed or failed: its temporary files and the journal of a
// snapshot never committed (nextJournal). Only regular files of ours and
// links of those names are removed (a link, not its target). Call it with
// the path's Lock held, so that no save of another informer is under way.
// It returns the names removed and the first error met.
func RemoveLeftovers(path, nextJournal string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, &Error{Reason: IOReason, Path: filepath.Dir(path), Err: err}
	}
	var removed []string
	var first error
	for _, e := range entries {
		name := filepath.Join(filepath.Dir(path), e.Name())
		if !isTmpOf(path, e.Name()) && name != filepath.Clean(nextJournal) {
			continue
		}
		if err := removeOwn(name); err != nil {
			first = cmp.Or(first, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, first
}

// removeOwn removes name if it is a link or a regular file of ours.
func removeOwn(name string) error {
	st, err := os.Lstat(name)
	if err != nil {
		return &Error{Reason: IOReason, Path: name, Err: err}
	}
	if st.Mode().Type() != fs.ModeSymlink {
		if err := ownFile(name, st); err != nil {
			return err
		}
	}
	if err := os.Remove(name); err != nil {
		return &Error{Reason: IOReason, Path: name, Err: err}
	}
	return nil
}
