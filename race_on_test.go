//go:build race

package cache

// poolSlack is what the race detector adds to an allocation count that goes
// through a sync.Pool: it makes the pool drop a quarter of what is put
// back, so a pooled buffer is sometimes made anew.
const poolSlack = 1.0
