//go:build race

package form

// raceEnabled: the race detector makes sync.Pool drop a quarter of what is
// put back, so pooled buffers are sometimes allocated anew.
const raceEnabled = true
