package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/objmeta"
	"github.com/openinformer/cache/internal/snapshot"
	"github.com/openinformer/cache/internal/store"
)

// The journal (docs/RESTART.md, "Window" and "Stopping") records the
// changes applied after a snapshot, so that a restart resumes from the
// last batch applied rather than from the snapshot alone, and so that a
// stop need not write a snapshot at all. It is started, under the
// informer's blockDeltas, at the very moment the store is frozen for a
// snapshot, so it holds exactly the changes after the frozen state; or,
// after a warm start, continued after the last whole change it replayed,
// the catch-up's changes appended as they are staged. Each batch of deltas
// applied appends its changes and flushes, without fsync: a crashed
// process's writes are in the page cache. Any prefix of a journal is a
// state the server had, so a journal that stops (a relist, a failed
// write) stays usable up to where it stopped.
//
// A save starts its journal beside the path (nextJournalPath) and renames
// it over the snapshot's journal once the snapshot is committed: until
// then the previous snapshot and its whole journal stay on disk, so that a
// crash during a long write still resumes from the last change.

// journalPath is the journal beside a snapshot.
func journalPath(snapshotPath string) string { return snapshotPath + ".journal" }

// nextJournalPath is the journal of a snapshot being written.
func nextJournalPath(snapshotPath string) string { return snapshotPath + ".journal.next" }

// journalStopDivisor bounds the journal a stop leaves instead of a
// snapshot: at most 1/journalStopDivisor of the snapshot's bytes. The
// next start replays the journal after reading the snapshot, at about the
// snapshot's read speed per byte, so a quarter adds at most a quarter to
// the load (0.2 s at 100k pods); a full save costs the whole snapshot's
// write and fsync now (9–16 s at 100k pods). Past the bound the stop saves,
// which also starts the next run's journal afresh.
const journalStopDivisor = 4

// startJournalLocked replaces the journal with one following h, the header
// of the snapshot being written of a store indexed by set, and returns it
// (nil if it could not be started). Call with blockDeltas held.
func (r *restarter) startJournalLocked(logger klog.Logger, h snapshot.Header, set *store.IndexerSet) *snapshot.JournalWriter {
	r.stopJournalLocked()
	j, err := snapshot.CreateJournal(nextJournalPath(r.opts.Path), h)
	if err != nil {
		logger.Error(err, "Snapshot journal not started", "path", r.opts.Path)
		return nil
	}
	r.useJournalLocked(j, set, false)
	return j
}

// useJournalLocked makes j the journal of the changes to come, framing
// the values of set's indexes; onDisk says whether the snapshot it follows
// is committed. Call with blockDeltas held.
func (r *restarter) useJournalLocked(j *snapshot.JournalWriter, set *store.IndexerSet, onDisk bool) {
	r.journal, r.journalSet, r.journalFramed, r.journalOnDisk = j, set, store.FramedIndexes(set), onDisk
}

// commitJournal moves j, the journal of a snapshot of size bytes just
// committed, to the snapshot's journal path, replacing the previous
// snapshot's; while j goes on, the two describe the store.
func (r *restarter) commitJournal(logger klog.Logger, j *snapshot.JournalWriter, size int64) {
	r.blockDeltas.Lock()
	defer r.blockDeltas.Unlock()
	r.snapshotBytes = size
	if j == nil {
		return
	}
	if err := j.Rename(journalPath(r.opts.Path)); err != nil {
		logger.Error(err, "Snapshot journal not kept", "path", r.opts.Path)
		if r.journal == j {
			r.stopJournalLocked()
		}
		return
	}
	r.journalOnDisk = r.journal == j
}

// stopJournalLocked closes the journal, which stays valid up to its last
// change. Call with blockDeltas held.
func (r *restarter) stopJournalLocked() {
	if r.journal != nil {
		_ = r.journal.Close()
		r.journal, r.journalOnDisk = nil, false
	}
}

// syncJournalAtStop ends a run whose snapshot on disk and journal describe
// the final state by syncing the journal, in place of a save, when the
// journal is within its bound; it reports whether it did.
func (r *restarter) syncJournalAtStop(logger klog.Logger) bool {
	r.blockDeltas.Lock()
	defer r.blockDeltas.Unlock()
	j := r.journal
	if j == nil || !r.journalOnDisk {
		return false
	}
	if n := j.ChangeBytes(); n > r.snapshotBytes/journalStopDivisor {
		logger.V(4).Info("Snapshot journal over its bound, saving", "path", r.opts.Path, "journalBytes", n, "snapshotBytes", r.snapshotBytes)
		return false
	}
	if err := j.Sync(); err != nil {
		logger.Error(err, "Snapshot journal not synced, saving", "path", r.opts.Path)
		return false
	}
	logger.V(4).Info("Snapshot journal synced at stop", "path", r.opts.Path, "journalBytes", j.ChangeBytes())
	r.stopJournalLocked()
	return true
}

// errJournalStops is a delta after which the journal cannot go on.
var errJournalStops = errors.New("the journal stops here")

// journalDelta journals what the store's record of writes does not: a
// bookmark's progress. Writes are journaled from that record; the Replace
// of a warm start's hand-over, at version handOver, is journaled already;
// any other delta is a relist.
func (r *restarter) journalDelta(d Delta, handOver string) error {
	switch d.Type {
	case ReplacedAll:
		if info, ok := d.Object.(ReplacedAllInfo); ok && handOver != "" && info.ResourceVersion == handOver {
			return nil
		}
		return errJournalStops
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

// journalApplied is the restarter's one observer of the pipeline, told
// with blockDeltas held of each batch of deltas the informer applied: the
// store's read-only record of its writes (nil for a delta about the whole
// store) and the batch's error. It appends the batch's writes, each Put
// with the value the store now holds (a compact store's encoding as it
// is, not encoded again; a plain store's object, encoded once) and its
// index values as the store computed them, then a bookmark's progress,
// and flushes. Superseded writes are journaled too, so that every prefix
// of the journal is a state the server had. A batch the store did not
// apply whole ends the journal, which could not tell which of its changes
// hold; so do a relist, a tombstone and a write it cannot journal. A warm
// start's hand-over does not, its content being the one journaled.
func (r *restarter) journalApplied(logger klog.Logger, deltas []Delta, writes store.Committed, applyErr error) {
	if applyErr != nil {
		r.stopJournalLocked()
		return
	}
	handOver := r.handOver
	r.handOver = ""
	if r.journal == nil {
		return
	}
	var err error
	if writes != nil {
		err = r.appendWrites(deltas, writes)
	}
	for i := 0; err == nil && i < len(deltas); i++ {
		err = r.journalDelta(deltas[i], handOver)
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

func (r *restarter) appendWrites(deltas []Delta, b store.Committed) error {
	if b.Set() != r.journalSet {
		return errJournalStops // indexes changed: the journal's framing no longer holds
	}
	for i := range b.Len() {
		if _, isObject := b.Obj(i).(runtime.Object); b.Err(i) != nil || !isObject || !isWrite(deltas[i].Type) {
			return errJournalStops
		}
	}
	for i := range b.Len() {
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
func (r *restarter) appendWrite(b store.Committed, i int) error {
	key, obj := b.Key(i), b.Obj(i)
	m, err := objmeta.Accessor(obj)
	if err != nil {
		return err
	}
	if b.Deleted(i) {
		return r.journal.Delete(m.GetResourceVersion(), key)
	}
	all := b.Values(i)
	if b.Superseded(i) && len(r.journalFramed) > 0 { // not indexed by the store: computed here (rare)
		all, _ = b.Set().Values(nil, key, obj)
	}
	return r.appendPut(m.GetResourceVersion(), key, b.Held(i), all)
}

// appendPut appends a put of held (a compact store's encoding, a plain
// store's object) under key at rv, with its values in every index of the
// journal's set by position (nil: none), of which the framed ones are
// kept.
func (r *restarter) appendPut(rv, key string, held any, all [][]string) error {
	vals := r.journalVals[:0]
	for _, pos := range r.journalFramed {
		var v []string
		if all != nil {
			v = all[pos]
		}
		vals = append(vals, v)
	}
	r.journalVals = vals
	r.journalFrame = store.AppendFrame(r.journalFrame[:0], vals, len(r.journalFramed))
	buf := binary.AppendUvarint(r.journalBuf[:0], uint64(len(r.journalFrame)))
	buf = append(buf, r.journalFrame...)
	buf, err := r.store.AppendRecord(buf, key, held)
	r.journalBuf = buf
	if err != nil {
		return err
	}
	return r.journal.Put(rv, key, buf)
}

// journalStaged appends a catch-up change just staged: key now holds v at
// rv (a preheld or an object, as staged), or is gone when v is nil. A
// change that cannot be journaled stops the journal.
func (r *restarter) journalStaged(logger klog.Logger, rv, key string, v any) {
	r.blockDeltas.Lock()
	defer r.blockDeltas.Unlock()
	if r.journal == nil {
		return
	}
	var err error
	if v == nil {
		err = r.journal.Delete(rv, key)
	} else if held, set, vals, ok := store.HeldAhead(v); ok {
		err = errJournalStops
		if set == r.journalSet {
			err = r.appendPut(rv, key, held, vals)
		}
	} else {
		all, _ := r.journalSet.Values(nil, key, v)
		err = r.appendPut(rv, key, v, all)
	}
	if err != nil {
		if !errors.Is(err, errJournalStops) {
			logger.Error(err, "Snapshot journal stopped", "path", r.opts.Path)
		}
		r.stopJournalLocked()
	}
}

// endCatchUp ends a warm start's journaling of the catch-up: when synced
// at rv, the journal records the version reached and expects the
// hand-over's Replace; otherwise it stops, before the fresh sync's relist.
func (r *restarter) endCatchUp(logger klog.Logger, synced bool, rv string) {
	r.blockDeltas.Lock()
	defer r.blockDeltas.Unlock()
	if r.journal == nil {
		return
	}
	if !synced {
		r.stopJournalLocked()
		return
	}
	r.handOver = rv
	err := r.journal.Progress(rv)
	if err == nil {
		err = r.journal.Flush()
	}
	if err != nil {
		logger.Error(err, "Snapshot journal stopped", "path", r.opts.Path)
		r.stopJournalLocked()
	}
}

// replayJournal applies the journal following h, if there is one, to
// staged and returns the version reached; the journal then goes on after
// the last change applied (or, if there was none, anew), so that the
// catch-up's changes and the run's follow. A journal that is missing, or
// follows another snapshot, is ignored; one torn by a crash is applied up
// to its last whole change.
func (r *restarter) replayJournal(logger klog.Logger, h snapshot.Header, staged map[string]any) (string, error) {
	set := r.store.IndexerSet()
	j, err := snapshot.OpenJournal(journalPath(r.opts.Path), &h)
	if err != nil {
		r.continueJournal(logger, h, nil, set)
		return h.ResourceVersion, nil
	}
	defer j.Close()
	rv := h.ResourceVersion
	framed := store.FramedIndexes(set)
	for i := 0; ; i++ {
		c, err := j.Next()
		if err == io.EOF {
			r.continueJournal(logger, h, j, set)
			return rv, nil
		}
		if err != nil {
			return "", err
		}
		switch c.Op {
		case snapshot.Put:
			key := string(c.Key)
			obj, err := r.store.LoadRecord(key, c.Value, set, framed)
			if err != nil {
				return "", store.Undecodable("journal change", i, err)
			}
			staged[key] = obj
		case snapshot.Delete:
			delete(staged, string(c.Key))
		}
		rv = string(c.ResourceVersion)
	}
}

// continueJournal makes the journal read (j, read to its end) or, when
// nil, a new one following h the journal of the changes to come. A
// failure is logged: the informer then saves when it stops.
func (r *restarter) continueJournal(logger klog.Logger, h snapshot.Header, j *snapshot.JournalReader, set *store.IndexerSet) {
	path := journalPath(r.opts.Path)
	var w *snapshot.JournalWriter
	var err error
	if j != nil {
		w, err = snapshot.ContinueJournal(path, j)
	} else {
		w, err = snapshot.CreateJournal(path, h)
	}
	if err != nil {
		logger.Error(err, "Snapshot journal not continued", "path", r.opts.Path)
		return
	}
	r.blockDeltas.Lock()
	defer r.blockDeltas.Unlock()
	r.stopJournalLocked()
	r.useJournalLocked(w, set, true)
}

// abandonJournal ends j, the journal of a snapshot whose write failed, and
// removes its file: it follows no snapshot, and a next start would only
// remove it then.
func (r *restarter) abandonJournal(j *snapshot.JournalWriter) {
	if j == nil {
		return
	}
	r.blockDeltas.Lock()
	if r.journal == j {
		r.stopJournalLocked()
	}
	r.blockDeltas.Unlock()
	_, _ = snapshot.RemoveLeftovers(r.opts.Path, nextJournalPath(r.opts.Path))
}
