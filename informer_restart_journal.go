package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/snapshot"
)

// The journal (docs/RESTART.md, "Window") records the changes applied after
// a snapshot, so that a restart after a crash resumes from the last batch
// applied rather than from the last periodic snapshot. It is started, under
// the informer's blockDeltas, at the very moment the store is frozen for a
// snapshot, so it holds exactly the changes after the frozen state; each
// batch of deltas applied appends its changes and flushes, without fsync:
// a crashed process's writes are in the page cache. Any prefix of a
// journal is a state the server had, so a journal that stops (a relist, a
// failed write) stays usable up to where it stopped.

// journalPath is the journal beside a snapshot.
func journalPath(snapshotPath string) string { return snapshotPath + ".journal" }

// startJournalLocked replaces the journal with one following h, the header
// of the snapshot being written. Call with blockDeltas held.
func (r *restarter) startJournalLocked(logger klog.Logger, h snapshot.Header) {
	r.stopJournalLocked()
	j, err := snapshot.CreateJournal(journalPath(r.opts.Path), h)
	if err != nil {
		logger.Error(err, "Snapshot journal not started", "path", r.opts.Path)
		return
	}
	r.journal = j
}

// stopJournalLocked closes the journal, which stays valid up to its last
// change. Call with blockDeltas held.
func (r *restarter) stopJournalLocked() {
	if r.journal != nil {
		_ = r.journal.Close()
		r.journal = nil
	}
}

// journalBatch appends the changes of a batch of deltas just applied and
// flushes them. A relist stops the journal: its changes are not a
// continuation of the journal's. Call with blockDeltas held.
func (r *restarter) journalBatch(logger klog.Logger, deltas []Delta) {
	if r.journal == nil {
		return
	}
	for _, d := range deltas {
		if err := r.journalDelta(d); err != nil {
			if !errors.Is(err, errJournalStops) {
				logger.Error(err, "Snapshot journal stopped", "path", r.opts.Path)
			}
			r.stopJournalLocked()
			return
		}
	}
	if err := r.journal.Flush(); err != nil {
		logger.Error(err, "Snapshot journal stopped", "path", r.opts.Path)
		r.stopJournalLocked()
	}
}

// errJournalStops is a delta after which the journal cannot go on.
var errJournalStops = errors.New("the journal stops here")

func (r *restarter) journalDelta(d Delta) error {
	switch d.Type {
	case Sync, SyncAll:
		return nil
	case Bookmark:
		info, ok := d.Object.(BookmarkInfo)
		if !ok {
			return fmt.Errorf("bookmark delta of %T", d.Object)
		}
		return r.journal.Progress(info.ResourceVersion)
	case Added, Updated, Deleted:
	default: // Replaced, ReplacedAll: a relist
		return errJournalStops
	}
	obj, ok := d.Object.(runtime.Object)
	if !ok {
		return errJournalStops // a tombstone: what was deleted is not known
	}
	m, err := accessor(obj)
	if err != nil {
		return err
	}
	key, err := informerKeyFunc(obj)
	if err != nil {
		return err
	}
	if d.Type == Deleted {
		return r.journal.Delete(m.GetResourceVersion(), key)
	}
	r.journalBuf, err = r.store.appendObjectValue(r.journalBuf[:0], key, obj)
	if err != nil {
		return err
	}
	return r.journal.Put(m.GetResourceVersion(), key, r.journalBuf)
}

// appendObjectValue appends obj's value as a snapshot holds it: its framed
// index values, computed from obj, and its record, encoded.
func (st *snapshotStore) appendObjectValue(dst []byte, key string, obj runtime.Object) ([]byte, error) {
	set := st.c.storage.indexers.Load()
	framed := framedIndexes(set)
	var vals [][]string
	if len(framed) > 0 {
		vals = make([][]string, len(framed))
		for j, pos := range framed {
			if v, err := set.fns[pos](obj); err == nil {
				vals[j] = v
			}
		}
	}
	frame := appendFrame(nil, vals, len(framed))
	dst = binary.AppendUvarint(dst, uint64(len(frame)))
	dst = append(dst, frame...)
	e, err := st.codec.Encode(obj)
	if err != nil {
		return dst, fmt.Errorf("snapshot journal: encoding %q: %w", key, err)
	}
	return e.AppendRecord(dst), nil
}

// replayJournal applies the journal following h, if there is one, to
// staged and returns the version reached. A journal that is missing, or
// follows another snapshot, is ignored; one torn by a crash is applied up
// to its last whole change.
func (r *restarter) replayJournal(h snapshot.Header, staged map[string]any) (string, error) {
	j, err := snapshot.OpenJournal(journalPath(r.opts.Path), &h)
	if err != nil {
		return h.ResourceVersion, nil
	}
	defer j.Close()
	rv := h.ResourceVersion
	set := r.store.c.storage.indexers.Load()
	framed := framedIndexes(set)
	for {
		c, err := j.Next()
		if err == io.EOF {
			return rv, nil
		}
		if err != nil {
			return "", err
		}
		switch c.Op {
		case snapshot.Put:
			key := string(c.Key)
			obj, err := r.store.loadRecord(key, c.Value, set, framed)
			if err != nil {
				return "", &snapshot.Error{Reason: snapshot.CorruptReason, Detail: fmt.Sprintf("journal record %q", key), Err: err}
			}
			staged[key] = obj
		case snapshot.Delete:
			delete(staged, string(c.Key))
		}
		rv = string(c.ResourceVersion)
	}
}

// journal records a batch of deltas just applied, when snapshots are on;
// a batch the store did not apply whole (applyErr) ends the journal, which
// could not tell which of its changes hold. Call with blockDeltas held;
// restart is set before the queue is popped.
func (s *sharedIndexInformer) journal(logger klog.Logger, deltas []Delta, applyErr error) {
	switch {
	case s.restart == nil:
	case applyErr != nil:
		s.restart.stopJournalLocked()
	default:
		s.restart.journalBatch(logger, deltas)
	}
}
