//go:build unix

package snapshot

import (
	"io/fs"
	"syscall"
)

// noFollow makes an open fail on a link.
const noFollow = syscall.O_NOFOLLOW

// fileOwner returns the uid owning st's file.
func fileOwner(st fs.FileInfo) (int, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(sys.Uid), true
}
