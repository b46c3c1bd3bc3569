// Package restartfsm holds every decision of a warm restart (docs/RESTART.md)
// as a plain state machine: whether the loaded snapshot can be used, which
// request to send next, when the cache has caught up with the server and may
// be handed to handlers, and when to give up and sync from scratch. It does no
// I/O, starts no goroutines and keeps no objects: the caller performs each
// Action and feeds the outcome back as an Input, like internal/reflectorfsm.
//
// The states, in order:
//
//	loading      Begin asked to read the snapshot; Loaded answers
//	probing      a consistent LIST with limit=1 learns the server's current
//	             resourceVersion, the target
//	resuming     a WATCH from the snapshot's resourceVersion is opening
//	catching-up  events are applied to the staged cache, unseen by handlers,
//	             until one, or a bookmark, reaches the target
//	synced       the staged cache is handed over as a LIST's result at the
//	             version reached, from which the informer watches as after
//	             any LIST
//	fallback     the staged cache is dropped and the informer syncs as if
//	             there were no snapshot, from a consistent read; logged once
//
// Synced and fallback are final: later inputs are answered with Done.
//
// Resource versions are compared in exactly two places, both with
// apimachinery's resourceversion.CompareResourceVersion (decimal integers
// without leading zeros, as every etcd-backed server gives): the snapshot's
// version against the target, and each event's or bookmark's against the
// target. A version that is not of that form cannot be ordered, so a restart
// that would need to compare it falls back (NotComparable).
package restartfsm
