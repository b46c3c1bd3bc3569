//go:build !race

package cache

// poolSlack is 0 without the race detector: pooled buffers are reused.
const poolSlack = 0.0
