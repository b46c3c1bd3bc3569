//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package snapshot

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting. Two opens of one
// file conflict even within a process, since flock locks belong to the
// open file, not the process.
func tryLock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrLocked
		case errors.Is(err, syscall.EINTR):
			continue
		default:
			return &Error{Reason: IOReason, Path: f.Name(), Err: err}
		}
	}
}
