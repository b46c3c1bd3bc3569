package cache

import "time"

// SnapshotMetrics receives an informer's warm-restart measurements
// (docs/RESTART.md, "Metrics"): set SnapshotOptions.Metrics. Its methods
// are called from the informer's goroutines, one at a time per informer,
// and must not block.
type SnapshotMetrics interface {
	// ObserveSnapshotSaved is told each snapshot committed: how long
	// freezing, walking, writing and syncing it took, its size on disk,
	// its object count, and when it was frozen (the age of the last one is
	// the time since).
	ObserveSnapshotSaved(took time.Duration, bytes int64, objects int, at time.Time)
	// ObserveSnapshotFailed is told each snapshot that could not be saved.
	ObserveSnapshotFailed()
	// ObserveRestart is told how a start ended: "synced" when warm, else
	// the fallback's reason as logged ("no snapshot" for a first start).
	ObserveRestart(outcome string)
}

// RestartSynced is the outcome ObserveRestart is told for a warm restart.
const RestartSynced = "synced"

// noSnapshotMetrics is the SnapshotMetrics of options without one.
type noSnapshotMetrics struct{}

func (noSnapshotMetrics) ObserveSnapshotSaved(time.Duration, int64, int, time.Time) {}
func (noSnapshotMetrics) ObserveSnapshotFailed()                                    {}
func (noSnapshotMetrics) ObserveRestart(string)                                     {}
