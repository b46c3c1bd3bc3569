package cache

import (
	"fmt"
	"slices"
)

// This file is the store's side of an informer: the store applies each
// batch of deltas popped from the queue and says what changed, deciding
// add versus update by what it held, never by the delta type. The
// informer then hands the changes to its handlers; it never looks inside
// the store.

// deltaStore is a store that applies deltas itself: this package's.
type deltaStore interface {
	// applyDeltas applies deltas in order and appends to changes what
	// each did. deltas is either one delta of any type or writes only
	// (the caller checks with batchable), applied in one transaction. Objects of a relist
	// that could not be stored are returned in dropped, for the caller to
	// report. err says which deltas failed; one failure costs no other
	// delta of a batch, and a failed delta gives no change.
	applyDeltas(deltas []Delta, isInInitialList bool, changes []notification) (out []notification, dropped []error, err error)
}

var _ deltaStore = &cache{}

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

// applyDeltas is the deltaStore operation. The store's transformer is not
// applied (the informer's queue transforms); a single failed write returns
// its own error, a batch's failures one error naming them.
func (c *cache) applyDeltas(deltas []Delta, isInInitialList bool, changes []notification) ([]notification, []error, error) {
	if len(deltas) == 1 && !isBatchable(deltas[0].Type) {
		return applyWhole(c, deltas[0], isInInitialList, changes)
	}
	changes, txErr := c.applyWrites(deltas, isInInitialList, changes)
	return changes, nil, batchError(len(deltas), txErr)
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

// wholeStore is a store as a delta about all of it needs it.
type wholeStore interface {
	List() []interface{}
	Bookmark(rv string)
	// applyReplacedAll swaps the content for info's list and appends the
	// changes: tombstones for the keys gone, then an update or add per
	// listed object in list order.
	applyReplacedAll(info ReplacedAllInfo, isInInitialList bool, changes []notification) ([]notification, []error, error)
}

// applyWhole applies to s a delta about the whole store.
func applyWhole(s wholeStore, d Delta, isInInitialList bool, changes []notification) ([]notification, []error, error) {
	switch d.Type {
	case ReplacedAll:
		info, ok := d.Object.(ReplacedAllInfo)
		if !ok {
			return changes, nil, fmt.Errorf("ReplacedAll did not contain ReplacedAllInfo: %T", d.Object)
		}
		return s.applyReplacedAll(info, isInInitialList, changes)
	case SyncAll:
		if _, ok := d.Object.(SyncAllInfo); !ok {
			return changes, nil, fmt.Errorf("SyncAll did not contain SyncAllInfo: %T", d.Object)
		}
		for _, obj := range s.List() {
			changes = append(changes, notification{kind: updateNotification, oldObj: obj, newObj: obj})
		}
	case Bookmark:
		info, ok := d.Object.(BookmarkInfo)
		if !ok {
			return changes, nil, fmt.Errorf("bookmark delta did not contain BookmarkInfo: %T", d.Object)
		}
		s.Bookmark(info.ResourceVersion)
	}
	return changes, nil, nil
}

// applyReplacedAll swaps the content for info's list, then reports the
// difference: a tombstone (holding the stored object) for every key that
// is gone, then an update or add per listed object in list order. Each
// key is computed once, and what was stored before is read from the
// replaced content after the swap instead of looked up key by key.
func (c *cache) applyReplacedAll(info ReplacedAllInfo, isInInitialList bool, changes []notification) ([]notification, []error, error) {
	r, dropped := c.replaceList(info.Objects, info.ResourceVersion)
	// A relist is most of a store: size for it once rather than doubling.
	changes = slices.Grow(changes, len(r.objs))
	changes = c.tombstones(r, changes)
	for i, obj := range r.objs {
		if old, existed := c.replacedObject(r, r.keys[i]); existed {
			changes = append(changes, notification{kind: updateNotification, oldObj: old, newObj: obj})
		} else {
			changes = append(changes, notification{kind: addNotification, newObj: obj, initial: isInInitialList})
		}
	}
	return changes, dropped, nil
}

// tombstones appends a delete for every key r replaced and did not keep.
func (c *cache) tombstones(r replacement, changes []notification) []notification {
	if r.before.Len() == 0 {
		return changes
	}
	r.before.Range(func(key string, held interface{}) bool {
		if _, listed := r.after.Get(key); !listed {
			if old, ok := c.storage.viewOld(key, held); ok {
				changes = append(changes, notification{kind: deleteNotification, oldObj: DeletedFinalStateUnknown{Key: key, Obj: old}})
			}
		}
		return true
	})
	return changes
}

// replacedObject is the object key held before the replacement r.
func (c *cache) replacedObject(r replacement, key string) (interface{}, bool) {
	held, existed := r.before.Get(key)
	if !existed {
		return nil, false
	}
	return c.storage.viewOld(key, held)
}

// applyWrites writes deltas, all writes, in one transaction and appends a
// change for each that succeeded. Whether a write is an add or an update,
// and its update's old object, is what the key held just before it: the
// batch's previous delta of the key, oldest first, or what the store held.
// Each key and its prior are read in one lookup before the transaction,
// which takes the prior instead of reading it again (with compact storage,
// a hot-cache lookup or a decode).
func (c *cache) applyWrites(deltas []Delta, isInInitialList bool, changes []notification) ([]notification, *TransactionError) {
	b := getWriteBatch(len(deltas))
	defer b.release()
	b.byName = c.metaKeys
	for _, d := range deltas {
		key, old, err := c.lookup(d.Object)
		typ := TransactionTypeUpdate
		if d.Type == Deleted {
			typ = TransactionTypeDelete
		}
		b.ws = append(b.ws, write{key: key, typ: typ, obj: d.Object, prior: old, err: err})
	}
	c.storage.apply(b)
	if c.committed != nil {
		c.committed(deltas, b)
	}
	for i := range b.ws {
		if b.ws[i].err == nil {
			changes = append(changes, b.change(i, isInInitialList))
		}
	}
	return changes, b.transactionError()
}

// change is what write i of a committed batch tells an informer's
// handlers.
func (b *writeBatch) change(i int, isInInitialList bool) notification {
	w := &b.ws[i]
	if w.typ == TransactionTypeDelete {
		return notification{kind: deleteNotification, oldObj: w.obj}
	}
	if old, ok := b.before(i); ok {
		return notification{kind: updateNotification, oldObj: old, newObj: w.obj}
	}
	return notification{kind: addNotification, newObj: w.obj, initial: isInInitialList}
}
