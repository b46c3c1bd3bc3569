package cache

import (
	"time"
)

// Pop waits for a delta, removes it and calls process with it (as a
// one-element Deltas) and whether it belongs to the initial list. The
// initial list only counts as delivered once process has returned. An error
// from process is returned and the delta is not requeued. Once the queue is
// closed and empty, Pop returns ErrFIFOClosed.
//
// process runs under the queue lock unless UnlockWhileProcessing is set;
// callers must then be a single consumer. With UnlockWhileProcessing and two
// batches or more still queued, producers wait until process returns.
func (f *RealFIFO) Pop(process PopProcessFunc) (interface{}, error) {
	if process == nil {
		return nil, errNilProcessFunc
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.waitLocked() {
		return nil, ErrFIFOClosed
	}
	initial := !f.sync.synced
	d, _ := f.items.PopFront()
	depth := f.items.Len()
	f.metrics.queued.Set(float64(depth))
	// One boxed value serves as both the argument and the result.
	var item interface{} = Deltas{d}
	defer f.sync.consumed(1)
	if f.releaseForProcessingLocked() {
		defer f.reacquireAfterProcessing()
	}
	t := f.startProcessing(depth)
	err := process(item, initial)
	t.done(f, d, 1)
	return item, err
}

// PopBatch waits for deltas and removes a run of them from the head: up to
// 1000 deltas of distinct keys, all of batchable types (Added, Updated,
// Deleted, Replaced, Sync) and all inside or all outside the initial list.
// A ReplacedAll, SyncAll or Bookmark delta at the head is taken alone; a
// delta whose key cannot be computed ends the run it is part of. A run of
// one goes to processSingle (as a one-element Deltas), longer runs to
// processBatch. Otherwise PopBatch behaves like Pop.
func (f *RealFIFO) PopBatch(processBatch ProcessBatchFunc, processSingle PopProcessFunc) error {
	if processBatch == nil || processSingle == nil {
		return errNilProcessFunc
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.waitLocked() {
		return ErrFIFOClosed
	}
	initial := !f.sync.synced
	deltas := f.takeBatchLocked()
	depth := f.items.Len()
	f.metrics.queued.Set(float64(depth))
	defer f.sync.consumed(len(deltas))
	if f.releaseForProcessingLocked() {
		defer f.reacquireAfterProcessing()
	}
	t := f.startProcessing(depth)
	var err error
	if len(deltas) == 1 {
		err = processSingle(Deltas(deltas), initial)
	} else {
		err = processBatch(deltas, initial)
	}
	t.done(f, deltas[0], len(deltas))
	return err
}

// takeBatchLocked removes and returns the next batch; the queue is not empty.
func (f *RealFIFO) takeBatchLocked() []Delta {
	deltas := make([]Delta, f.batchLenLocked())
	f.items.PopFrontInto(deltas)
	return deltas
}

// batchLenLocked measures the run of deltas at the head that form one batch:
// it ends before a delta that cannot share a batch and, with client-go
// v0.37, before a key seen earlier in the run (by hash, so a collision only
// ends it early) and after a delta without a key. Client-go v0.38 lets a
// batch hold several deltas of one object (the store applies them oldest
// first), so with it only the delta types end a batch.
func (f *RealFIFO) batchLenLocked() int {
	limit := min(f.items.Len(), realFIFOBatchSize)
	if f.sync.initial > 0 {
		limit = min(limit, f.sync.initial)
	}
	if limit == 1 || !isBatchable(f.items.At(0).Type) {
		return 1
	}
	if clientGoV038 {
		return f.batchableRunLocked(limit)
	}
	f.batchSeen.Reset(limit)
	for i := 0; i < limit; i++ {
		d := f.items.At(i)
		if !isBatchable(d.Type) {
			return i
		}
		p, err := f.keys.partsOf(d.Object)
		if err != nil {
			return i + 1
		}
		if !f.batchSeen.Add(p.Hash(f.keySeed)) {
			return i
		}
	}
	return limit
}

// batchableRunLocked is the number of deltas, up to limit, at the head whose
// types may share a batch.
func (f *RealFIFO) batchableRunLocked(limit int) int {
	for i := 1; i < limit; i++ {
		if !isBatchable(f.items.At(i).Type) {
			return i
		}
	}
	return limit
}

// isBatchable reports whether deltas of type t may share a batch: per-object
// changes can, whole-queue events (ReplacedAll, SyncAll, Bookmark) cannot.
func isBatchable(t DeltaType) bool {
	switch t {
	case Added, Updated, Deleted, Replaced, Sync:
		return true
	}
	return false
}

// waitLocked blocks until a delta is queued; false means the queue is
// closed and empty.
func (f *RealFIFO) waitLocked() bool {
	for f.items.Len() == 0 {
		if f.closed {
			return false
		}
		f.cond.Wait()
	}
	return true
}

// releaseForProcessingLocked releases the lock for the processing that
// follows when UnlockWhileProcessing is set, and reports whether it did.
// With two batches or more still queued, client-go keeps its lock for the
// processing, so that a slow consumer throttles its producers instead of
// letting the queue grow without bound. This queue holds producers back
// the same way, in waitForRoomLocked, but without the lock: the consumer
// never waits for a producer to hand the lock back, and HasSynced, Close
// and IsClosed answer at once.
func (f *RealFIFO) releaseForProcessingLocked() bool {
	if !f.unlockWhileProcessing {
		return false
	}
	f.holdingBack = f.items.Len() >= 2*realFIFOBatchSize
	f.mu.Unlock()
	return true
}

// reacquireAfterProcessing takes the lock back and lets held-back
// producers go on.
func (f *RealFIFO) reacquireAfterProcessing() {
	f.mu.Lock()
	if f.holdingBack {
		f.holdingBack = false
		f.cond.Broadcast()
	}
}

// waitForRoomLocked holds a producer back while the consumer processes a
// batch with a long backlog; see releaseForProcessingLocked. Close lets
// every producer through, as writes to a closed queue are still accepted.
func (f *RealFIFO) waitForRoomLocked() {
	for f.holdingBack && !f.closed {
		f.cond.Wait()
	}
}

const (
	// slowProcessing is how long processing may take, with a backlog of
	// more than slowProcessingDepth deltas, before it is logged.
	slowProcessing      = 100 * time.Millisecond
	slowProcessingDepth = 10
)

// processingTimer measures one processing call, for the latency metric and
// for the slow-handler log. The clock is read only when one of them needs it.
type processingTimer struct {
	start time.Time
	depth int
}

func (f *RealFIFO) startProcessing(depth int) processingTimer {
	if !f.measureLatency && depth <= slowProcessingDepth {
		return processingTimer{depth: depth}
	}
	return processingTimer{start: time.Now(), depth: depth}
}

// done records the processing of n deltas starting with first.
func (t processingTimer) done(f *RealFIFO, first Delta, n int) {
	if t.start.IsZero() {
		return
	}
	elapsed := time.Since(t.start)
	f.metrics.latency.Observe(elapsed.Seconds())
	limit := min(slowProcessing*time.Duration(n), time.Second)
	if t.depth <= slowProcessingDepth || elapsed < limit {
		return
	}
	id, _ := f.keys.keyOf(first)
	kv := []interface{}{"id", id, "depth", t.depth, "batchSize", n, "duration", elapsed,
		"reason", "slow event handlers blocking the queue"}
	if gvr := f.identifier.GroupVersionResource(); !gvr.Empty() {
		kv = append(kv, "resource", gvr)
	}
	f.logger.Info("Slow processing of popped deltas", kv...)
}
