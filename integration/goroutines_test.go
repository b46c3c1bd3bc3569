package integration

import (
	"bytes"
	"runtime"
	"testing"
	"time"
)

// ourPackage prefixes the frames of openinformer's root package (and not of
// this module, whose path continues with a slash).
const ourPackage = "github.com/openinformer/cache."

// expectOurGoroutinesGone checks, once the test and its cleanups are done,
// that no goroutine runs in or was started by openinformer's package: every
// informer was stopped, so all of theirs must have exited. Call it first in a
// test so its cleanup runs last. Client-go's side cannot be checked this way
// because the API server in the same process runs client-go informers.
func expectOurGoroutinesGone(t *testing.T) {
	t.Cleanup(func() {
		eventually(t, 30*time.Second, "openinformer goroutines exit", func() (bool, string) {
			left := goroutinesMentioning(ourPackage)
			if len(left) == 0 {
				return true, ""
			}
			return false, string(left[0])
		})
	})
}

// goroutinesMentioning returns the stacks of goroutines that mention s.
func goroutinesMentioning(s string) [][]byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var found [][]byte
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte(s)) {
			found = append(found, g)
		}
	}
	return found
}
