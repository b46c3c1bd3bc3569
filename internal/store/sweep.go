package store

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// sweepBatch is how many tier moves one hold of the lock stores: enough to
// make the lock's cost small per move, few enough that a writer waits
// for little.
const sweepBatch = 256

// move is one key's change of tier: from held to next.
type move struct {
	key        string
	held, next any
}

// Sweep offers every stored object to the form's Retier once per walk,
// from one consistent state and without the lock, and stores what Retier
// returns in place of the held value it was given unless a write has
// replaced that meanwhile. The form's SweepPass says how many walks (a
// memory budget may need two). Nothing a reader sees changes: the object
// is the same, its indexes and the store's resource version too. It
// returns how many objects moved; a done ctx ends it early.
func (s *Map) Sweep(ctx context.Context) int {
	moved := 0
	for pass := 0; ctx.Err() == nil && s.form.SweepPass(pass); pass++ {
		moved += s.walk(ctx)
	}
	return moved
}

// walk is one walk of Sweep.
func (s *Map) walk(ctx context.Context) int {
	moved := 0
	batch := make([]move, 0, sweepBatch)
	s.freezeItems().Range(func(key string, held any) bool {
		if next, ok := s.form.Retier(key, held); ok {
			batch = append(batch, move{key: key, held: held, next: next})
			if len(batch) == sweepBatch {
				moved += s.applyMoves(batch)
				batch = batch[:0]
			}
		}
		return ctx.Err() == nil
	})
	return moved + s.applyMoves(batch)
}

// applyMoves stores each move of batch whose key still holds what it
// moves from, taking the lock for the batch.
func (s *Map) applyMoves(batch []move) int {
	if len(batch) == 0 {
		return 0
	}
	s.lockForWrite()
	defer s.mu.Unlock()
	n := 0
	for _, m := range batch {
		if cur, ok := s.items.Get(m.key); !ok || cur != m.held {
			continue
		}
		*s.items.Existing(s.epoch, m.key) = m.next
		n++
	}
	return n
}

// Sweeper is what SweepEvery tells of its sweeps, and what can ask for one
// early: the form of the store.
type Sweeper interface {
	// Wake is sent to for a sweep before the period is up (at most one
	// per MinSweepGap); nil for none.
	Wake() <-chan struct{}
	// SweepEnded is told how long each sweep took.
	SweepEnded(ctx context.Context, took time.Duration)
}

// MinSweepGap is the shortest time between the end of a sweep and the
// start of one that Wake asked for: each sweep walks every object.
const MinSweepGap = time.Second

// SweepEvery sweeps every period on clk, and when sw wakes it, until ctx
// ends, telling sw how long each sweep took: the cold tier's background
// work, run by the informer that owns the store.
func (s *Map) SweepEvery(ctx context.Context, clk clock.Clock, period time.Duration, sw Sweeper) {
	logger := klog.FromContext(ctx)
	t := clk.NewTimer(period)
	defer t.Stop()
	wake := sw.Wake()
	ended := clk.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-wake:
			if gap := MinSweepGap - clk.Since(ended); gap > 0 {
				t.Stop()
				t.Reset(min(gap, period-clk.Since(ended)))
				continue
			}
			t.Stop()
		}
		start := clk.Now()
		moved := s.Sweep(ctx)
		ended = clk.Now()
		took := ended.Sub(start)
		sw.SweepEnded(ctx, took)
		logger.V(4).Info("Cold tier swept", "moved", moved, "duration", took)
		t.Reset(period)
	}
}
