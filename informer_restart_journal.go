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
// of the snapshot being written of a store indexed by set. Call with
// blockDeltas held.
func (r *restarter) startJournalLocked(logger klog.Logger, h snapshot.Header, set *indexerSet) {
	r.stopJournalLocked()
	j, err := snapshot.CreateJournal(journalPath(r.opts.Path), h)
	if err != nil {
		logger.Error(err, "Snapshot journal not started", "path", r.opts.Path)
		return
	}
	r.journal, r.journalSet, r.journalFramed = j, set, framedIndexes(set)
}

// stopJournalLocked closes the journal, which stays valid up to its last
// change. Call with blockDeltas held.
func (r *restarter) stopJournalLocked() {
	if r.journal != nil {
		_ = r.journal.Close()
		r.journal, r.journalErr = nil, nil
	}
}

// journalBatch ends the journaling of a batch of deltas just applied: the
// store's hook (journalWrites) appended its writes; a bookmark's progress
// is appended here, and the batch flushed. A relist, or a write the hook
// could not journal, stops the journal. Call with blockDeltas held.
func (r *restarter) journalBatch(logger klog.Logger, deltas []Delta) {
	if r.journal == nil {
		return
	}
	err := r.journalErr
	for i := 0; err == nil && i < len(deltas); i++ {
		err = r.journalDelta(deltas[i])
	}
	if err == nil {
		err = r.journal.Flush()
	}
	if err != nil {
		if !errors.Is(err, errJournalStops) {
			logger.Error(err, "Snapshot journal stopped", "path", r.opts.Path)
		}
		r.stopJournalLocked()
	}
}

// errJournalStops is a delta after which the journal cannot go on.
var errJournalStops = errors.New("the journal stops here")

// journalDelta journals what the store's hook did not: a bookmark's
// progress. Writes are the hook's; any other delta is a relist.
func (r *restarter) journalDelta(d Delta) error {
	switch d.Type {
	case Added, Updated, Deleted, Sync, SyncAll:
		return nil
	case Bookmark:
		info, ok := d.Object.(BookmarkInfo)
		if !ok {
			return fmt.Errorf("bookmark delta of %T", d.Object)
		}
		return r.journal.Progress(info.ResourceVersion)
	default: // Replaced, ReplacedAll: a relist
		return errJournalStops
	}
}

// journalWrites is the store's hook (cache.committed): it appends the
// writes of a batch of deltas the store just committed, each Put with the
// value the store now holds (a compact store's encoding as it is, not
// encoded again; a plain store's object, encoded once) and its index
// values as the store computed them. Superseded writes are journaled too,
// so that every prefix of the journal is a state the server had. A batch
// not committed whole, a relist's or a tombstone stops the journal, at
// journalBatch, which runs next under the same blockDeltas.
func (r *restarter) journalWrites(deltas []Delta, b *writeBatch) {
	if r.journal == nil || r.journalErr != nil {
		return
	}
	r.journalErr = r.appendWrites(deltas, b)
}

func (r *restarter) appendWrites(deltas []Delta, b *writeBatch) error {
	if b.set != r.journalSet {
		return errJournalStops // indexes changed: the journal's framing no longer holds
	}
	for i := range b.ws {
		if _, isObject := b.ws[i].obj.(runtime.Object); b.ws[i].err != nil || !isObject || !isWrite(deltas[i].Type) {
			return errJournalStops
		}
	}
	for i := range b.ws {
		if deltas[i].Type != Sync {
			if err := r.appendWrite(b, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// isWrite reports whether a delta of type t is a change the journal keeps
// (or, for a resync, needs not keep).
func isWrite(t DeltaType) bool { return t == Added || t == Updated || t == Deleted || t == Sync }

// appendWrite appends write i of b: its key, its object's version and,
// for a put, its framed index values and its record as held.
func (r *restarter) appendWrite(b *writeBatch, i int) error {
	w := &b.ws[i]
	m, err := accessor(w.obj)
	if err != nil {
		return err
	}
	if w.typ == TransactionTypeDelete {
		return r.journal.Delete(m.GetResourceVersion(), w.key)
	}
	vals := r.journalVals[:0]
	if len(r.journalFramed) > 0 {
		all := b.valuesOf(i)
		if w.superseded { // not indexed by the store: computed here (rare)
			all, _ = b.set.values(nil, w.key, w.obj)
		}
		for _, pos := range r.journalFramed {
			vals = append(vals, all[pos])
		}
	}
	r.journalVals = vals
	r.journalFrame = appendFrame(r.journalFrame[:0], vals, len(r.journalFramed))
	buf := binary.AppendUvarint(r.journalBuf[:0], uint64(len(r.journalFrame)))
	buf = append(buf, r.journalFrame...)
	buf, err = r.store.appendRecord(buf, w.key, w.held)
	r.journalBuf = buf
	if err != nil {
		return err
	}
	return r.journal.Put(m.GetResourceVersion(), w.key, buf)
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
