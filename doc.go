// Package cache is openinformer: a drop-in replacement for
// k8s.io/client-go/tools/cache (v0.37.2), the machinery that keeps a
// controller's in-memory copy of Kubernetes objects in step with the API
// server and tells the controller what changed.
//
// Switching is one import line:
//
//	import cache "github.com/openinformer/cache"
//
// # The pipeline
//
//	ListerWatcher ──► Reflector ──► queue ──► controller ──► Indexer (the cache)
//	                                                │          applies each batch,
//	                                                │ ◄──────── returns the changes
//	                                                ▼
//	                                         fan-out ──► handlers
//
// A Reflector keeps one resource in step with the API server through a
// ListerWatcher. It first syncs the whole set, by default by streaming it
// over a watch (watch-list: the server sends every object, then a bookmark
// marking the end of the initial events), falling back to a paged LIST when
// the server or the ListerWatcher does not support that. Then it watches
// from the synced resource version, resuming after a clean close, backing
// off on 429 and refused connections, and relisting when the server answers
// 410 Gone because the version fell out of its history. The list, watch and
// backoff decisions are a pure state machine (internal/reflectorfsm); the
// Reflector only carries them out.
//
// The Reflector writes what it sees into a queue. The default, RealFIFO,
// keeps every change in arrival order and turns a whole relist into a single
// ReplacedAll entry, so consumers see an atomic swap. While its consumer is
// two batches or more behind, writers wait for the batch in hand to be
// processed, so a slow consumer cannot make the queue grow without bound.
// DeltaFIFO, the older design that folds the changes of one object
// together, is still available as the Queue of a controller built with
// New; informers no longer use it, since client-go v0.37.2 locks the
// InOrderInformers feature gate on.
//
// The controller pops the queue in order, in batches where it can, and
// hands each batch to the Indexer, which applies it (a batch of writes in
// one transaction) and returns the changes it made: whether each is an add,
// an update or a delete is decided by what the Indexer held before, not by
// what the server said. The controller then hands the changes to the
// handlers; it never looks inside the store, and the store knows nothing of
// handlers: its engine (internal/store) returns a change record, which the
// informer turns into notifications.
// The Indexer is a thread-safe store with secondary indexes, built on a
// persistent map: List, ListKeys, ByIndex and IndexKeys each read one
// consistent, frozen state without holding the lock writers need, so busy
// listers never slow the informer down.
//
// Finally the fan-out (internal/fanout) hands each change to every registered
// ResourceEventHandler. Each handler has one goroutine and its own buffer,
// sees notifications one at a time in the order the cache changed, and never
// waits for another handler.
//
// # Informers
//
// Most code needs only a SharedIndexInformer:
//
//	informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{
//		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
//	})
//	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{...})
//	go informer.RunWithContext(ctx)
//	cache.WaitForCacheSync(ctx.Done(), reg.HasSynced)
//
// The informer is synced once the initial list has reached the Indexer; a
// registration is synced once its handler has also returned from every add
// of that initial list. A handler added after the start first gets an add
// for every cached object. Deletes may carry a DeletedFinalStateUnknown
// tombstone when the deletion was inferred from a relist.
//
// NewInformerWithOptions builds a single-handler informer whose handler runs
// on the processing goroutine itself; New builds a bare controller around a
// queue you provide.
//
// # Beyond client-go
//
// SharedIndexInformerOptions adds fields client-go lacks; each one's zero
// value keeps client-go's behaviour, log lines included. Three watch the
// handlers: per-handler lag metrics (HandlerMetricsProvider), a log warning
// naming a handler whose oldest pending notification is too old
// (SlowHandlerThreshold), and an opt-in bound on each handler's backlog
// (MaxPendingNotificationsPerHandler) that collapses an overflowing backlog
// into a catch-up to the latest state distributed for each key instead of
// growing without limit. Two shrink the cache: StripManagedFields drops
// metadata.managedFields, and Compact keeps objects encoded (below). Bad
// input (nil objects, objects without metadata, nil handlers, a nil
// ListerWatcher) gets a clear error where client-go panics or half-applies
// a change. One object's failure never costs another: an object whose index
// function fails is stored and left out of that index only, and one whose
// key or transform fails is left out of a relist while the rest is stored;
// each failure is reported through utilruntime.HandleError and counted. The
// README lists every difference.
//
// # Compact storage
//
// Compact storage (an opt-in, see CompactOptions) keeps each cached object
// as its encoding rather than as a decoded tree of structs, maps and
// strings: protobuf for the built-in API types, CBOR for unstructured
// objects and other types the scheme knows, JSON for the rest, all through
// apimachinery's serializers. The README's "Memory" section gives the heap
// it saves and what reads and events cost. Index values are computed from
// the written object and kept (on a watch-list sync, as each object
// arrives, so the store's initial fill decodes nothing), so IndexKeys,
// ListKeys and ListIndexFuncValues never decode; reads that return objects
// decode them after the store's lock is released, unless a bounded cache of
// recently decoded objects still holds the object decoded from the same
// bytes, or an object it evicted that is still alive (it holds those
// weakly). A write puts the written object in that cache, so reading an
// object back, and the old object of its next update, usually cost no
// decode. An object read from the cache is shared, as in the default mode;
// an object decoded afresh belongs to the caller, so mutating it does not
// change the cache.
//
// # Locks
//
// What callers can rely on:
//
//   - Handlers are called with no lock of the informer, its store or its
//     other handlers held: a handler may read the informer's store and
//     indexer (listers included), and a handler that blocks delays only its
//     own notifications (its backlog grows, or collapses when
//     MaxPendingNotificationsPerHandler bounds it).
//   - The informer writes a batch of changes to its store and releases the
//     store's lock before handing the changes to handlers, so readers never
//     wait for a handler.
//   - Index functions, key functions and transforms may run while the store
//     or the queue holds its lock, as in client-go: they must not call the
//     store, the queue or the informer.
//   - Package sharding's MembershipInformer runs each handler under that
//     handler's own lock, so the old and new generations never overlap in
//     one handler, and never holds its own lock while a handler runs.
//
// The internal lock order, the warm restart's locks included, is written in
// one place, the doc comment of the informer's type in shared_informer.go;
// each locking type's doc comment says what its locks guard.
//
// # Architecture
//
// This package keeps client-go's surface and the constructors that wire
// it. The engines behind it are internal packages with small APIs: the
// store engine and the change record a committed batch produces
// (internal/store), the fan-out to handlers (internal/fanout), the
// storage forms, plain and compact (internal/form),
// the reflector's and the warm restart's decisions (internal/reflectorfsm,
// internal/restartfsm) and the snapshot file (internal/snapshot). Each
// opt-in feature reaches the pipeline through one seam: compact storage
// through the store's form, the warm restart through an observer of
// applied batches and the store's snapshot API, both given to
// constructors. docs/ARCHITECTURE.md has the package map and the path of
// one event through the files.
//
// # Testing
//
// Package github.com/openinformer/cache/fake is an in-memory API server that
// implements ListerWatcher with the semantics of the real one (selectors,
// paging, resource versions, bookmarks, watch-list, 410 Gone) and injects
// faults on demand. Informers from this package and from client-go run on
// it unchanged.
//
// # Compatibility
//
// Interfaces, function types and plain data are type aliases of client-go's
// (see types.go), so values built here satisfy client-go's interfaces and
// plug into generated listers and controller-runtime. Feature gates are read
// from k8s.io/client-go/features where client-go reads them.
package cache
