package cache

import (
	"errors"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/snapshot"
)

// SnapshotOptions turns on warm restarts (docs/RESTART.md): the informer
// saves its cache to a file, periodically and when it stops, and on its next
// start resumes the watch from the saved resourceVersion instead of listing
// every object again. Beside the file it keeps a journal of the changes
// applied since (Path + ".journal"), so that a restart after a crash resumes
// from the last change, and a stop whose file and journal already hold the
// final state only syncs the journal rather than writing the whole file.
//
// The files hold the cached objects in clear, Secrets' data included, in
// mode 0600 (docs/RESTART.md, "Files and what they hold"). Options that
// cannot work (an empty Path, a directory that does not exist) are
// reported once when the informer is made, which then runs without
// snapshots.
type SnapshotOptions struct {
	// Path is the snapshot file. Its directory must exist and survive the
	// restarts that should be warm: an emptyDir survives container
	// restarts (crash loops, OOM kills), a persistent volume survives a
	// pod's replacement. Use a directory no other user can write to. One
	// informer per path: a lock (Path + ".lock") held while the informer
	// runs turns a second one's snapshots off, logged at its start.
	Path string
	// Scope is what the ListerWatcher lists beyond the object type. Nil
	// derives it from a ListWatch made by NewListWatchFromClient or
	// NewFilteredListWatchFromClient; for any other ListerWatcher nil
	// turns snapshots off (logged once): a scope is never guessed.
	Scope *SnapshotScope
	// Resource is the resource the informer lists. The zero value derives
	// it from the example object's apiVersion and kind, or its Go type's
	// kind in client-go's scheme; an example object that names neither
	// (an empty Unstructured, a PartialObjectMetadata) needs it set, or
	// snapshots stay off (logged once).
	Resource schema.GroupVersionResource
	// Version names how cached objects are made (the transform, the index
	// functions); a snapshot saved under another Version is not used. Bump
	// it when the function given to SetTransform or an indexer changes.
	Version string
	// ClusterID names the cluster the informer lists from, for example
	// the UID of its kube-system namespace; "" names none. It is recorded
	// in the snapshot, and a snapshot recorded with another is refused:
	// set it wherever one path may meet two clusters (a volume moved, two
	// kubeconfigs). Without it, a snapshot of another cluster is caught
	// only by the probe's check of one object (docs/RESTART.md,
	// "Identity").
	ClusterID string
	// Interval is the time between snapshots while running; 0 means
	// DefaultSnapshotInterval, a value below MinSnapshotInterval is raised
	// to it, a negative value saves only when the informer stops.
	Interval time.Duration
	// CatchUpTimeout bounds how long a restart waits for the resumed watch
	// to reach the server's current resourceVersion before it falls back
	// to a full sync; 0 means DefaultSnapshotCatchUpTimeout, a negative
	// value waits for ever, logging every SnapshotCatchUpWaitLogInterval
	// that it still waits.
	CatchUpTimeout time.Duration
	// Metrics receives snapshot and restart measurements; nil records
	// none.
	Metrics SnapshotMetrics
}

// SnapshotScope identifies what an informer caches besides its type: a
// snapshot saved for another scope is not used.
type SnapshotScope struct {
	Namespace     string
	LabelSelector string
	FieldSelector string
}

// DefaultSnapshotInterval is the time between snapshots when
// SnapshotOptions.Interval is 0.
const DefaultSnapshotInterval = 5 * time.Minute

// DefaultSnapshotCatchUpTimeout is how long a restart waits to catch up
// when SnapshotOptions.CatchUpTimeout is 0.
const DefaultSnapshotCatchUpTimeout = 90 * time.Second

// MinSnapshotInterval is the least time between snapshots: a positive
// SnapshotOptions.Interval below it is raised to it, since each save
// writes the whole cache.
const MinSnapshotInterval = time.Second

// SnapshotCatchUpWaitLogInterval is how often a restart without a
// catch-up timeout logs that it is still waiting.
const SnapshotCatchUpWaitLogInterval = time.Minute

// checkedSnapshotOptions returns o when its Path can be used, else nil,
// logged once: an informer is made without snapshots rather than failing
// at every save.
func checkedSnapshotOptions(o *SnapshotOptions) *SnapshotOptions {
	if o == nil {
		return nil
	}
	err := errors.New("SnapshotOptions.Path is empty")
	if o.Path != "" {
		err = snapshot.CheckDir(filepath.Dir(o.Path))
	}
	if err != nil {
		klog.Background().Info("Warning: snapshots turned off", "path", o.Path, "err", err)
		return nil
	}
	return o
}

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
