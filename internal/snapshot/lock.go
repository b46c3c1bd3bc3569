package snapshot

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked is the error of a Lock taken already: another informer, in
// this process or another, saves to the same path.
var ErrLocked = errors.New("snapshot path in use by another informer or process")

// Lock is held on a snapshot path while one informer uses it, so that a
// second informer or process on the same path is refused at its start
// instead of overwriting the first one's files. It is an advisory lock
// (flock) on path + ".lock", which the operating system releases when the
// process dies: a crash leaves no stale lock. The lock file itself is
// never removed, since removing it while another process waits to lock it
// would let two hold "the" lock.
type Lock struct{ f *os.File }

// LockPath is the lock file of the snapshot at path.
func LockPath(path string) string { return path + ".lock" }

// TryLock takes the lock of the snapshot at path, without waiting: when
// another holder has it, the error wraps ErrLocked.
func TryLock(path string) (*Lock, error) {
	name := LockPath(path)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|noFollow, fileMode)
	switch {
	case isLinkError(err):
		return nil, &Error{Reason: UnsafeReason, Path: name, Detail: "a symbolic link"}
	case err != nil:
		return nil, &Error{Reason: IOReason, Path: name, Err: err}
	}
	st, err := f.Stat()
	if err == nil {
		err = ownFile(name, st)
	}
	if err == nil {
		err = tryLock(f)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%s: %w", name, ErrLocked)
		}
		return nil, err
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock.
func (l *Lock) Unlock() error { return l.f.Close() }
