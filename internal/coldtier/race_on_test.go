//go:build race

package coldtier

// raceEnabled: the race detector makes sync.Pool drop some of what is put
// back, so the codec's pooled state is sometimes allocated anew.
const raceEnabled = true
