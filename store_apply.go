package cache

import (
	"fmt"
	"slices"

	"github.com/openinformer/cache/internal/fanout"
	"github.com/openinformer/cache/internal/store"
)

// This file turns an informer's deltas into the store's writes and the
// store's change records into notifications: the store applies each batch
// of deltas popped from the queue and says what changed, deciding add
// versus update by what it held, never by the delta type. The informer
// then hands the changes to its handlers; the store knows nothing of them.

// appliedFunc is told each batch of deltas the store applied (a warm
// restart's journal): the store's read-only record of the batch's writes,
// valid only during the call (nil for a delta about the whole store), and
// the batch's error.
type appliedFunc func(deltas []Delta, writes store.Committed, err error)

// unbatchableFormat keeps client-go's capitalised error text.
var unbatchableFormat = "Delta type %s is not supported in batch processing"

// batchable refuses a batch that holds anything but writes.
func batchable(deltas []Delta) error {
	for _, d := range deltas {
		if !isBatchable(d.Type) {
			return fmt.Errorf(unbatchableFormat, d.Type)
		}
	}
	return nil
}

// applyDeltas applies deltas in order and appends to changes what each
// did. deltas is either one delta of any type or writes only (the caller
// checks with batchable), applied in one transaction; applied, when set, is
// told the outcome once, with the transaction's record. Objects of a relist that could not be
// stored are returned in dropped, for the caller to report. err says which
// deltas failed; one failure costs no other delta of a batch, and a failed
// delta gives no change. The store's transformer is not applied (the
// informer's queue transforms); a single failed write returns its own
// error, a batch's failures one error naming them.
func (c *cache) applyDeltas(deltas []Delta, isInInitialList bool, changes []fanout.Notification, applied appliedFunc) ([]fanout.Notification, []error, error) {
	if len(deltas) == 1 && !isBatchable(deltas[0].Type) {
		changes, dropped, err := c.applyWhole(deltas[0], isInInitialList, changes)
		if applied != nil {
			applied(deltas, nil, err)
		}
		return changes, dropped, err
	}
	changes, err := c.applyWrites(deltas, isInInitialList, changes, applied)
	return changes, nil, err
}

// batchError words the failures of a batch of n write deltas as client-go
// v0.37.2 does: a single delta's own error, or one naming every failure.
//
// client-go v0.38 differs here only (batchErrorV038): a delta whose key
// cannot be computed is skipped before the transaction and its KeyError
// joined ahead of the other failures. v0.37.2's queue ends a batch after
// such a delta, and the wording shows in the log, so the v0.38 wording
// follows the v0.38 build.
func batchError(n int, txErr *TransactionError) error {
	switch {
	case txErr == nil:
		return nil
	case n == 1:
		return txErr.Errors[0]
	case clientGoV038:
		return batchErrorV038(txErr)
	}
	return fmt.Errorf("not all items in the batch successfully processed: %s", txErr.Error())
}

// applyWhole applies a delta about the whole store.
func (c *cache) applyWhole(d Delta, isInInitialList bool, changes []fanout.Notification) ([]fanout.Notification, []error, error) {
	switch d.Type {
	case ReplacedAll:
		info, ok := d.Object.(ReplacedAllInfo)
		if !ok {
			return changes, nil, fmt.Errorf("ReplacedAll did not contain ReplacedAllInfo: %T", d.Object)
		}
		return c.applyReplacedAll(info, isInInitialList, changes)
	case SyncAll:
		if _, ok := d.Object.(SyncAllInfo); !ok {
			return changes, nil, fmt.Errorf("SyncAll did not contain SyncAllInfo: %T", d.Object)
		}
		for _, obj := range c.List() {
			changes = append(changes, fanout.Notification{Kind: fanout.Update, Old: obj, New: obj})
		}
	case Bookmark:
		info, ok := d.Object.(BookmarkInfo)
		if !ok {
			return changes, nil, fmt.Errorf("bookmark delta did not contain BookmarkInfo: %T", d.Object)
		}
		c.Bookmark(info.ResourceVersion)
	}
	return changes, nil, nil
}

// applyReplacedAll swaps the content for info's list, then reports the
// difference: a tombstone (holding the stored object) for every key that
// is gone, then an update or add per listed object in list order. Each
// key is computed once, and what was stored before is read from the
// replaced content after the swap instead of looked up key by key.
func (c *cache) applyReplacedAll(info ReplacedAllInfo, isInInitialList bool, changes []fanout.Notification) ([]fanout.Notification, []error, error) {
	r, dropped := c.replaceList(info.Objects, info.ResourceVersion)
	// A relist is most of a store: size for it once rather than doubling.
	changes = slices.Grow(changes, r.Len())
	r.Gone(func(key string, old any) {
		changes = append(changes, fanout.Notification{Kind: fanout.Delete, Old: DeletedFinalStateUnknown{Key: key, Obj: old}})
	})
	for i := range r.Len() {
		key, obj := r.Object(i)
		if old, existed := r.Before(key); existed {
			changes = append(changes, fanout.Notification{Kind: fanout.Update, Old: old, New: obj})
		} else {
			changes = append(changes, fanout.Notification{Kind: fanout.Add, New: obj, Initial: isInInitialList})
		}
	}
	return changes, dropped, nil
}

// applyWrites writes deltas, all writes, in one transaction and appends a
// change for each that succeeded. Whether a write is an add or an update,
// and its update's old object, is what the key held just before it: the
// batch's previous delta of the key, oldest first, or what the store held.
// Each key and its prior are read in one lookup before the transaction,
// which takes the prior instead of reading it again (with compact storage,
// a hot-cache lookup or a decode).
func (c *cache) applyWrites(deltas []Delta, isInInitialList bool, changes []fanout.Notification, applied appliedFunc) ([]fanout.Notification, error) {
	b := store.GetBatch(len(deltas))
	defer b.Release()
	b.ByName = c.metaKeys
	for _, d := range deltas {
		key, old, err := c.lookup(d.Object)
		typ := TransactionTypeUpdate
		if d.Type == Deleted {
			typ = TransactionTypeDelete
		}
		b.Add(key, typ, d.Object, old, err)
	}
	c.storage.Apply(b)
	err := batchError(len(deltas), b.TransactionError())
	if applied != nil {
		applied(deltas, b, err)
	}
	for i := range b.Len() {
		if b.Err(i) == nil {
			changes = append(changes, changeOf(b, i, isInInitialList))
		}
	}
	return changes, err
}

// changeOf is what write i of a committed batch tells an informer's
// handlers.
func changeOf(b *store.Batch, i int, isInInitialList bool) fanout.Notification {
	switch kind, old, obj := b.Change(i); kind {
	case store.Deleted:
		return fanout.Notification{Kind: fanout.Delete, Old: old}
	case store.Updated:
		return fanout.Notification{Kind: fanout.Update, Old: old, New: obj}
	default:
		return fanout.Notification{Kind: fanout.Add, New: obj, Initial: isInInitialList}
	}
}
