package cache

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SnapshotOptions turns on warm restarts (docs/RESTART.md): the informer
// saves its cache to a file, periodically and when it stops, and on its next
// start resumes the watch from the saved resourceVersion instead of listing
// every object again. Beside the file it keeps a journal of the changes
// applied since (Path + ".journal"), so that a restart after a crash resumes
// from the last change, and a stop whose file and journal already hold the
// final state only syncs the journal rather than writing the whole file.
type SnapshotOptions struct {
	// Path is the snapshot file. Its directory must exist and survive the
	// restarts that should be warm: an emptyDir survives container
	// restarts (crash loops, OOM kills), a persistent volume survives a
	// pod's replacement. One informer per path.
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
	// Interval is the time between snapshots while running; 0 means
	// DefaultSnapshotInterval, a negative value saves only when the
	// informer stops.
	Interval time.Duration
	// CatchUpTimeout bounds how long a restart waits for the resumed watch
	// to reach the server's current resourceVersion before it falls back
	// to a full sync; 0 means DefaultSnapshotCatchUpTimeout, a negative
	// value waits for ever.
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
