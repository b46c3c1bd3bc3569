//go:build !unix

package snapshot

import "io/fs"

// noFollow is 0 where open has no O_NOFOLLOW; the Lstat checks remain.
const noFollow = 0

// fileOwner is unknown where files have no uid.
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }
