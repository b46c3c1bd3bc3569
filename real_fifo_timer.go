package cache

import "time"

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
