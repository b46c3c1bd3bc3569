package cache

import (
	"fmt"
	"hash/maphash"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/deque"
	"github.com/openinformer/cache/internal/keyparts"
)

// RealFIFOOptions configures a RealFIFO.
type RealFIFOOptions struct {
	// Logger receives the queue's log output (default klog.Background());
	// the queue's name is added to it.
	Logger *klog.Logger

	// Name replaces the default name "RealFIFO". A non-empty
	// Identifier.Name() takes precedence.
	Name string

	// KeyFunction computes the key of each object (default
	// MetaNamespaceKeyFunc).
	KeyFunction KeyFunc

	// KnownObjects is the consumer's store. Non-atomic Replace and Resync
	// consult it to find deleted and unchanged objects. It is required
	// without AtomicEvents and forbidden with it.
	KnownObjects KeyListerGetter

	// Transformer, if set, rewrites every incoming object before it is
	// queued. See TransformFunc.
	Transformer TransformFunc

	// AtomicEvents makes Replace queue one ReplacedAll delta and Resync one
	// SyncAll delta, instead of one delta per object.
	AtomicEvents bool

	// UnlockWhileProcessing lets producers enqueue while a popped item is
	// being processed. It requires AtomicEvents and a single consumer.
	UnlockWhileProcessing bool

	// Identifier names the queue for logs and metrics; metrics are published
	// only for a reserved identity.
	Identifier InformerNameAndResource

	// MetricsProvider builds the queue's metrics (default: the provider set
	// with SetInformerMetricsProvider).
	MetricsProvider InformerMetricsProvider

	// EmitDeltaTypeBookmark makes Bookmark queue a Bookmark delta. It
	// requires AtomicEvents, so that bookmarks never overtake a relist.
	EmitDeltaTypeBookmark bool
}

// realFIFOBatchSize caps the deltas handed to one PopBatch call.
const realFIFOBatchSize = 1000

// RealFIFO is the informers' default queue. Every change the Reflector
// reports becomes one Delta, and deltas are popped one by one (or in
// batches) in exactly the order they arrived: nothing is merged, so
// consumers see every intermediate state, including deletions of objects
// they never saw.
type RealFIFO struct {
	logger klog.Logger
	name   string

	queueCore
	items deque.Deque[Delta]

	keys         queueKeyer
	knownObjects KeyListerGetter
	transformer  TransformFunc

	atomicEvents          bool
	unlockWhileProcessing bool
	emitBookmarks         bool
	// holdingBack is set while a batch is processed with the lock released
	// and two batches or more still queued: producers wait on cond until it
	// clears, see releaseForProcessingLocked.
	holdingBack bool

	identifier     InformerNameAndResource
	metrics        queueMetrics
	measureLatency bool

	// batchSeen is PopBatch's scratch set of key hashes (seeded by
	// keySeed), kept between calls so a steady stream of batches allocates
	// nothing for it.
	batchSeen keyparts.HashSet
	keySeed   maphash.Seed
}

var (
	_ QueueWithBatch         = &RealFIFO{}
	_ TransformingStore      = &RealFIFO{}
	_ ReflectorBookmarkStore = &RealFIFO{}
	_ DoneChecker            = &RealFIFO{}
)

// NewRealFIFO returns a non-atomic RealFIFO that consults knownObjects on
// Replace and Resync.
//
// Deprecated: use NewRealFIFOWithOptions.
func NewRealFIFO(keyFunc KeyFunc, knownObjects KeyListerGetter, transformer TransformFunc) *RealFIFO {
	return NewRealFIFOWithOptions(RealFIFOOptions{
		KeyFunction:  keyFunc,
		KnownObjects: knownObjects,
		Transformer:  transformer,
	})
}

// NewRealFIFOWithOptions returns a RealFIFO configured by opts. Like
// client-go it panics on contradictory options, which are a programming
// error at construction; see RealFIFOOptions for the rules.
func NewRealFIFOWithOptions(opts RealFIFOOptions) *RealFIFO {
	if msg := realFIFOOptionsConflict(opts); msg != "" {
		panic("coding error: " + msg)
	}
	f := &RealFIFO{
		logger:                klog.Background(),
		name:                  "RealFIFO",
		keys:                  newQueueKeyer(opts.KeyFunction),
		knownObjects:          opts.KnownObjects,
		transformer:           opts.Transformer,
		atomicEvents:          opts.AtomicEvents,
		unlockWhileProcessing: opts.UnlockWhileProcessing,
		emitBookmarks:         opts.EmitDeltaTypeBookmark,
		identifier:            opts.Identifier,
		metrics:               newQueueMetrics(opts.Identifier, opts.MetricsProvider),
		measureLatency:        opts.Identifier.Reserved(),
		keySeed:               maphash.MakeSeed(),
	}
	f.keys.unwrapDelta = true
	if opts.Logger != nil {
		f.logger = *opts.Logger
	}
	if opts.Name != "" {
		f.name = opts.Name
	}
	if n := opts.Identifier.Name(); n != "" {
		f.name = n
	}
	f.logger = klog.LoggerWithName(f.logger, f.name)
	f.initCore()
	return f
}

// realFIFOOptionsConflict explains why opts cannot be honoured, or is "".
func realFIFOOptionsConflict(opts RealFIFOOptions) string {
	switch {
	case opts.AtomicEvents && opts.KnownObjects != nil:
		return "knownObjects must not be provided when AtomicEvents is true"
	case opts.AtomicEvents:
		return ""
	case opts.UnlockWhileProcessing:
		return "UnlockWhileProcessing must be false when AtomicEvents is false"
	case opts.KnownObjects == nil:
		return "knownObjects must be provided when AtomicEvents is false"
	case opts.EmitDeltaTypeBookmark:
		return "EmitDeltaTypeBookmark must be false when AtomicEvents is false"
	}
	return ""
}

// Add queues an Added delta for obj.
func (f *RealFIFO) Add(obj interface{}) error { return f.write(Added, obj) }

// Update queues an Updated delta for obj.
func (f *RealFIFO) Update(obj interface{}) error { return f.write(Updated, obj) }

// Delete queues a Deleted delta for obj, whether or not the object was ever
// seen: the consumer decides what a deletion of an unknown object means.
func (f *RealFIFO) Delete(obj interface{}) error { return f.write(Deleted, obj) }

func (f *RealFIFO) write(t DeltaType, obj interface{}) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waitForRoomLocked()
	f.sync.markPopulated()
	return f.enqueueLocked(t, obj, true)
}

// enqueueLocked checks that obj has a key, transforms it unless told not to
// or it is a tombstone, and queues it.
func (f *RealFIFO) enqueueLocked(t DeltaType, obj interface{}, transform bool) error {
	if err := f.keys.check(obj); err != nil {
		f.metrics.objectErrors.Inc()
		return KeyError{Obj: obj, Err: err}
	}
	if transform && f.transformer != nil {
		if _, tombstone := obj.(DeletedFinalStateUnknown); !tombstone {
			var err error
			if obj, err = f.transformer(obj); err != nil {
				f.metrics.objectErrors.Inc()
				return err
			}
		}
	}
	f.pushLocked(Delta{Type: t, Object: obj})
	return nil
}

func (f *RealFIFO) pushLocked(d Delta) {
	f.items.PushBack(d)
	f.cond.Broadcast()
	f.metrics.queued.Set(float64(f.items.Len()))
}

// Bookmark queues a Bookmark delta carrying resourceVersion if the queue
// emits bookmarks, and does nothing otherwise. It does not count as
// populating the queue.
func (f *RealFIFO) Bookmark(resourceVersion string) error {
	if !f.emitBookmarks {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waitForRoomLocked()
	f.pushLocked(Delta{Type: Bookmark, Object: BookmarkInfo{ResourceVersion: resourceVersion}})
	return nil
}

// Replace reports a relist. An atomic queue queues one ReplacedAll delta
// holding the (transformed) list; otherwise tombstones are queued for every
// queued or known key missing from list, followed by one Replaced delta per
// item. An object whose transform (or, when not atomic, key) fails is left
// out as if it were not listed, reported through utilruntime.HandleError and
// counted; the others are queued all the same.
func (f *RealFIFO) Replace(list []interface{}, resourceVersion string) error {
	return f.replace(list, resourceVersion, f.transformer)
}

// pretransformed is how f takes a list its transformer has already run
// on, such as a watch-list stream's initial state.
func (f *RealFIFO) pretransformed() *pretransformed {
	return &pretransformed{
		transform: f.transformer,
		replace: func(list []interface{}, rv string) error {
			return f.replace(list, rv, nil)
		},
		leaveOut: f.leaveOutStreamed,
	}
}

func (f *RealFIFO) replace(list []interface{}, resourceVersion string, transform TransformFunc) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waitForRoomLocked()
	if f.atomicEvents {
		f.replaceAtomicLocked(list, resourceVersion, transform)
	} else if err := f.replaceEachLocked(list, transform); err != nil {
		return err
	}
	f.sync.firstReplace(f.items.Len())
	return nil
}

func (f *RealFIFO) replaceAtomicLocked(list []interface{}, resourceVersion string, transform TransformFunc) {
	objs := list
	if transform != nil {
		// A new slice: the caller's list is left as it is.
		objs = make([]interface{}, 0, len(list))
		for _, obj := range list {
			t, err := transform(obj)
			if err != nil {
				f.leaveOut(obj, err)
				continue
			}
			objs = append(objs, t)
		}
	}
	f.pushLocked(Delta{Type: ReplacedAll, Object: ReplacedAllInfo{ResourceVersion: resourceVersion, Objects: objs}})
}

// leaveOut reports and counts err, the failure of one object of a relist,
// which is left out as if it were not listed: it must not cost the others.
func (f *RealFIFO) leaveOut(obj interface{}, err error) {
	f.metrics.objectErrors.Inc()
	reportLeftOut(f.logger, f.keys, obj, err)
}

// leaveOutStreamed is leaveOut for an object of a watch-list stream, which
// the Reflector collects outside the lock; the lock keeps the metric's
// counts in one goroutine at a time, as for every other count.
func (f *RealFIFO) leaveOutStreamed(obj interface{}, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaveOut(obj, err)
}

// reportLeftOut reports an object a queue's Replace leaves out, naming its
// key when it has one, never its contents (see withoutObject).
func reportLeftOut(logger klog.Logger, keys queueKeyer, obj interface{}, err error) {
	key, _ := keys.keyOf(obj)
	identity, cause := withoutObject(err)
	utilruntime.HandleErrorWithLogger(logger, cause, "Object from a relist left out", append([]any{"key", key}, identity...)...)
}

// replaceEachLocked is the non-atomic Replace. Everything that can fail is
// done before the first delta is queued.
func (f *RealFIFO) replaceEachLocked(list []interface{}, transform TransformFunc) error {
	listed := make(map[string]struct{}, len(list))
	objs := make([]interface{}, 0, len(list))
	for _, obj := range list {
		key, stored, err := f.keys.listedObject(obj, transform)
		if err != nil {
			f.leaveOut(obj, err)
			continue
		}
		listed[key] = struct{}{}
		objs = append(objs, stored)
	}
	deletions, err := f.replaceDeletionsLocked(listed)
	if err != nil {
		return err
	}
	// One reservation for the whole relist instead of repeated growth.
	f.items.Grow(len(deletions) + len(objs))
	for _, d := range deletions {
		f.items.PushBack(d)
	}
	for _, obj := range objs {
		f.items.PushBack(Delta{Type: Replaced, Object: obj})
	}
	f.cond.Broadcast()
	f.metrics.queued.Set(float64(f.items.Len()))
	return nil
}

// replaceDeletionsLocked returns the tombstones a non-atomic Replace queues:
// first for queued keys missing from listed whose last delta is not already
// a deletion (in first-queued order), then for known keys that are neither
// listed nor queued.
func (f *RealFIFO) replaceDeletionsLocked(listed map[string]struct{}) ([]Delta, error) {
	queuedKeys, lastQueued, err := f.lastDeltaPerKeyLocked()
	if err != nil {
		return nil, err
	}
	var deletions []Delta
	for _, key := range queuedKeys {
		if _, ok := listed[key]; ok || lastQueued[key].Type == Deleted {
			continue
		}
		deletions = append(deletions, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: key, Obj: lastQueued[key].Object}})
	}
	for _, key := range f.knownObjects.ListKeys() {
		if _, ok := listed[key]; ok {
			continue
		}
		if _, queued := lastQueued[key]; queued {
			continue
		}
		deletions = append(deletions, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: key, Obj: f.knownTombstoneObject(key)}})
	}
	return deletions, nil
}

// lastDeltaPerKeyLocked returns the queued keys in first-seen order and the
// last queued delta of each.
func (f *RealFIFO) lastDeltaPerKeyLocked() ([]string, map[string]Delta, error) {
	var order []string
	last := make(map[string]Delta)
	for i := 0; i < f.items.Len(); i++ {
		d := f.items.At(i)
		key, err := f.keys.keyOf(d.Object)
		if err != nil {
			return nil, nil, KeyError{Obj: d.Object, Err: err}
		}
		if _, seen := last[key]; !seen {
			order = append(order, key)
		}
		last[key] = d
	}
	return order, last, nil
}

// knownTombstoneObject returns the known object to put in key's tombstone,
// or nil (logged) when it cannot be read.
func (f *RealFIFO) knownTombstoneObject(key string) interface{} {
	obj, exists, err := f.knownObjects.GetByKey(key)
	switch {
	case err != nil:
		utilruntime.HandleErrorWithLogger(f.logger, err, "Error during lookup, placing DeleteFinalStateUnknown marker without object", "key", key)
		return nil
	case !exists:
		utilruntime.HandleErrorWithLogger(f.logger, nil, "Key does not exist in known objects store, placing DeleteFinalStateUnknown marker without object", "key", key)
		return nil
	}
	return obj
}

// Resync asks the consumer to revisit every object. An atomic queue queues
// one SyncAll delta. Otherwise every known object whose key has nothing
// queued gets an (untransformed) Sync delta; objects with queued deltas are
// skipped, since their known state is about to be superseded.
func (f *RealFIFO) Resync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waitForRoomLocked()
	if f.atomicEvents {
		f.pushLocked(Delta{Type: SyncAll, Object: SyncAllInfo{}})
		return nil
	}
	if f.knownObjects == nil {
		return nil
	}
	queued := make(map[string]struct{}, f.items.Len())
	for i := 0; i < f.items.Len(); i++ {
		d := f.items.At(i)
		key, err := f.keys.keyOf(d.Object)
		if err != nil {
			return KeyError{Obj: d, Err: err}
		}
		queued[key] = struct{}{}
	}
	for _, key := range f.knownObjects.ListKeys() {
		if _, ok := queued[key]; ok {
			continue
		}
		if err := f.resyncKeyLocked(key); err != nil {
			return err
		}
	}
	return nil
}

func (f *RealFIFO) resyncKeyLocked(key string) error {
	obj, exists, err := f.knownObjects.GetByKey(key)
	switch {
	case err != nil:
		utilruntime.HandleErrorWithLogger(f.logger, err, "Unable to queue object for sync", "key", key)
		return nil
	case !exists:
		utilruntime.HandleErrorWithLogger(f.logger, nil, "Key does not exist in known objects store, unable to queue object for sync", "key", key)
		return nil
	}
	if err := f.enqueueLocked(Sync, obj, false); err != nil {
		return fmt.Errorf("couldn't queue object: %w", err)
	}
	return nil
}

// HasSyncedChecker returns the queue itself, whose Done channel closes when
// HasSynced becomes true.
func (f *RealFIFO) HasSyncedChecker() DoneChecker { return f }

// Name returns the queue's name, as used in logs and by HasSyncedChecker.
func (f *RealFIFO) Name() string { return f.name }

// Transformer returns the queue's TransformFunc, so that a Reflector can
// apply the same transformation to the objects it keeps itself.
func (f *RealFIFO) Transformer() TransformFunc { return f.transformer }
