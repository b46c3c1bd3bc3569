package informerbuild

import (
	"context"
	"iter"
	"sync"

	cache "github.com/openinformer/cache"
)

// Runner is the run bookkeeping every factory shares: which informers run
// and the goroutines running them. The factory's lock guards it, except
// Wait, which is called without that lock.
type Runner[K comparable] struct {
	started      map[K]bool
	shuttingDown bool
	wg           sync.WaitGroup
}

// StartLocked runs each informer of all not started yet until ctx ends;
// after StopLocked it starts nothing.
func (r *Runner[K]) StartLocked(ctx context.Context, all iter.Seq2[K, cache.SharedIndexInformer]) {
	if r.shuttingDown {
		return
	}
	if r.started == nil {
		r.started = map[K]bool{}
	}
	for key, informer := range all {
		if r.started[key] {
			continue
		}
		r.wg.Go(func() { informer.RunWithContext(ctx) })
		r.started[key] = true
	}
}

// StartedLocked reports whether the informer under key was started.
func (r *Runner[K]) StartedLocked(key K) bool { return r.started[key] }

// StopLocked stops starting informers.
func (r *Runner[K]) StopLocked() { r.shuttingDown = true }

// Wait waits until every started informer has returned.
func (r *Runner[K]) Wait() { r.wg.Wait() }
