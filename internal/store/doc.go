// Package store is the store engine behind every Store, Indexer and
// ThreadSafeStore of the cache: the items and their indexes in persistent
// hash maps, read from a frozen state without the writers' lock; the write
// pipeline, in which a batch of writes is prepared outside the lock and
// committed under it, only the last write of each key applied; the change
// record a committed batch or a relist produces (Batch.Change,
// Replacement), which the informer turns into its handlers' notifications
// (this package knows nothing of handlers); objects held ahead of a
// Replace (Preheld); and a frozen state written to a restart snapshot and
// read back (Snapshots).
//
// A Map holds objects in a form.Form chosen at construction, and reaches
// it only through that interface: the plain form keeps objects as they
// are, the compact form keeps their encodings.
//
// Map.mu is the innermost lock of the cache (see the root package's
// sharedIndexInformer for the whole order): with it held, only index
// functions (as in client-go) and the form's methods that cannot block run.
package store
