package store

import clientcache "k8s.io/client-go/tools/cache"

// This file is the change record of a committed batch: what each write
// did, decided by what its key held just before it, never by what the
// caller called it. An informer turns it into its handlers' notifications;
// a warm restart's journal reads the writes as they were committed.

// ChangeKind is what a committed write did to its key.
type ChangeKind uint8

// The kinds of change.
const (
	Added ChangeKind = iota
	Updated
	Deleted
)

// Len is the number of writes of b.
func (b *Batch) Len() int { return len(b.ws) }

// Err is write i's error: the write was refused and not applied.
func (b *Batch) Err(i int) error { return b.ws[i].err }

// Change is what write i of a committed batch did: a delete of old (the
// object the caller deleted with), an update from old to new, or an add of
// new. Call it for writes without an error.
func (b *Batch) Change(i int) (kind ChangeKind, old, new any) {
	w := &b.ws[i]
	if w.typ == clientcache.TransactionTypeDelete {
		return Deleted, w.obj, nil
	}
	if old, ok := b.before(i); ok {
		return Updated, old, w.obj
	}
	return Added, nil, w.obj
}

// Key is write i's key.
func (b *Batch) Key(i int) string { return b.ws[i].key }

// Obj is write i's object, as the caller gave it.
func (b *Batch) Obj(i int) any { return b.ws[i].obj }

// Deleted reports whether write i is a delete.
func (b *Batch) Deleted(i int) bool { return b.ws[i].typ == clientcache.TransactionTypeDelete }

// Held is what the map holds for write i's object (for a put).
func (b *Batch) Held(i int) any { return b.ws[i].held }

// Superseded reports whether a later write of the batch wrote write i's
// key again: write i was not applied, nor indexed.
func (b *Batch) Superseded(i int) bool { return b.ws[i].superseded }

// Set is the generation of index functions the batch's values were
// computed with.
func (b *Batch) Set() *IndexerSet { return b.set }

// Values is write i's values in every index of Set, by position; none for
// a superseded write.
func (b *Batch) Values(i int) [][]string { return b.valuesOf(i) }

// Committed is the read-only view of a committed batch that an observer
// of the store's commits (a warm restart's journal) is given.
type Committed interface {
	Len() int
	Err(i int) error
	Key(i int) string
	Obj(i int) any
	Deleted(i int) bool
	Held(i int) any
	Superseded(i int) bool
	Set() *IndexerSet
	Values(i int) [][]string
}

var _ Committed = (*Batch)(nil)
