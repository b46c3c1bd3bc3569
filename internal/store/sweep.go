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

// Sweep offers every stored object to the form's Retier once, from one
// consistent state and without the lock, and stores what Retier returns
// in place of the held value it was given unless a write has replaced that
// meanwhile. Nothing a reader sees changes: the object is the same, its
// indexes and the store's resource version too. It returns how many
// objects moved; a done ctx ends it early.
func (s *Map) Sweep(ctx context.Context) int {
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

// SweepEvery sweeps every period on clk until ctx ends, telling swept how
// long each sweep took: the cold tier's background work, run by the
// informer that owns the store.
func (s *Map) SweepEvery(ctx context.Context, clk clock.Clock, period time.Duration, swept func(took time.Duration)) {
	logger := klog.FromContext(ctx)
	t := clk.NewTimer(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		start := clk.Now()
		moved := s.Sweep(ctx)
		took := clk.Since(start)
		swept(took)
		logger.V(4).Info("Cold tier swept", "moved", moved, "duration", took)
		t.Reset(period)
	}
}
