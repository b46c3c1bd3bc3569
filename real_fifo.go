package cache

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/deque"
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

const (
	// realFIFOBatchSize caps the deltas handed to one PopBatch call.
	realFIFOBatchSize = 1000
	// slowProcessing is how long processing may take, with a backlog of
	// more than slowProcessingDepth deltas, before it is logged.
	slowProcessing      = 100 * time.Millisecond
	slowProcessingDepth = 10
)

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
	// leaveOutFailures is set for an informer's queue: one object that a
	// relist cannot queue must not cost the others (see leaveOut).
	leaveOutFailures bool

	// batchSeen is PopBatch's scratch set of key hashes (seeded by
	// keySeed), kept between calls so a steady stream of batches allocates
	// nothing for it.
	batchSeen hashSet
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
// item. Nothing is queued when an error is returned: an object whose
// transform (or, when not atomic, key) fails is an error, except in an
// informer's queue, which reports, counts and leaves out that object as if
// it were not listed and queues the others all the same.
func (f *RealFIFO) Replace(list []interface{}, resourceVersion string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waitForRoomLocked()
	var err error
	if f.atomicEvents {
		err = f.replaceAtomicLocked(list, resourceVersion)
	} else {
		err = f.replaceEachLocked(list)
	}
	if err != nil {
		return err
	}
	f.sync.firstReplace(f.items.Len())
	return nil
}

func (f *RealFIFO) replaceAtomicLocked(list []interface{}, resourceVersion string) error {
	objs := list
	if f.transformer != nil {
		// A new slice: the caller's list is left as it is.
		objs = make([]interface{}, 0, len(list))
		for _, obj := range list {
			t, err := f.transformer(obj)
			if err != nil {
				if err = f.leaveOut(obj, err); err != nil {
					return err
				}
				continue
			}
			objs = append(objs, t)
		}
	}
	f.pushLocked(Delta{Type: ReplacedAll, Object: ReplacedAllInfo{ResourceVersion: resourceVersion, Objects: objs}})
	return nil
}

// leaveOut returns err, the failure of one object of a relist, unless the
// queue is an informer's: then it reports and counts err and returns nil,
// and the object is left out.
func (f *RealFIFO) leaveOut(obj interface{}, err error) error {
	if !f.leaveOutFailures {
		return err
	}
	f.metrics.objectErrors.Inc()
	key, _ := f.keys.keyOf(obj)
	utilruntime.HandleErrorWithLogger(f.logger, err, "Object from a relist left out", "key", key)
	return nil
}

// transformAll returns list transformed into a new slice (the caller's list
// is left as it is), or list itself when there is no transformer.
func transformAll(transform TransformFunc, list []interface{}) ([]interface{}, error) {
	if transform == nil {
		return list, nil
	}
	out := make([]interface{}, len(list))
	for i, obj := range list {
		t, err := transform(obj)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// replaceEachLocked is the non-atomic Replace. Everything that can fail is
// done before the first delta is queued.
func (f *RealFIFO) replaceEachLocked(list []interface{}) error {
	listed := make(map[string]struct{}, len(list))
	objs := make([]interface{}, 0, len(list))
	for _, obj := range list {
		key, stored, err := f.listedObject(obj)
		if err != nil {
			if err = f.leaveOut(obj, err); err != nil {
				return err
			}
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

// listedObject returns a listed object's key and the object as queued.
func (f *RealFIFO) listedObject(obj interface{}) (string, interface{}, error) {
	key, err := f.keys.keyOf(obj)
	if err != nil {
		return "", nil, KeyError{Obj: obj, Err: err}
	}
	if f.transformer == nil {
		return key, obj, nil
	}
	stored, err := f.transformer(obj)
	if err != nil {
		return "", nil, fmt.Errorf("couldn't enqueue object: %w", err)
	}
	return key, stored, nil
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

// Pop waits for a delta, removes it and calls process with it (as a
// one-element Deltas) and whether it belongs to the initial list. The
// initial list only counts as delivered once process has returned. An error
// from process is returned and the delta is not requeued. Once the queue is
// closed and empty, Pop returns ErrFIFOClosed.
//
// process runs under the queue lock unless UnlockWhileProcessing is set;
// callers must then be a single consumer. With UnlockWhileProcessing and two
// batches or more still queued, producers wait until process returns.
func (f *RealFIFO) Pop(process PopProcessFunc) (interface{}, error) {
	if process == nil {
		return nil, errNilProcessFunc
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.waitLocked() {
		return nil, ErrFIFOClosed
	}
	initial := !f.sync.synced
	d, _ := f.items.PopFront()
	depth := f.items.Len()
	f.metrics.queued.Set(float64(depth))
	// One boxed value serves as both the argument and the result.
	var item interface{} = Deltas{d}
	defer f.sync.consumed(1)
	if f.releaseForProcessingLocked() {
		defer f.reacquireAfterProcessing()
	}
	t := f.startProcessing(depth)
	err := process(item, initial)
	t.done(f, d, 1)
	return item, err
}

// PopBatch waits for deltas and removes a run of them from the head: up to
// 1000 deltas of distinct keys, all of batchable types (Added, Updated,
// Deleted, Replaced, Sync) and all inside or all outside the initial list.
// A ReplacedAll, SyncAll or Bookmark delta at the head is taken alone; a
// delta whose key cannot be computed ends the run it is part of. A run of
// one goes to processSingle (as a one-element Deltas), longer runs to
// processBatch. Otherwise PopBatch behaves like Pop.
func (f *RealFIFO) PopBatch(processBatch ProcessBatchFunc, processSingle PopProcessFunc) error {
	if processBatch == nil || processSingle == nil {
		return errNilProcessFunc
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.waitLocked() {
		return ErrFIFOClosed
	}
	initial := !f.sync.synced
	deltas := f.takeBatchLocked()
	depth := f.items.Len()
	f.metrics.queued.Set(float64(depth))
	defer f.sync.consumed(len(deltas))
	if f.releaseForProcessingLocked() {
		defer f.reacquireAfterProcessing()
	}
	t := f.startProcessing(depth)
	var err error
	if len(deltas) == 1 {
		err = processSingle(Deltas(deltas), initial)
	} else {
		err = processBatch(deltas, initial)
	}
	t.done(f, deltas[0], len(deltas))
	return err
}

// takeBatchLocked removes and returns the next batch; the queue is not empty.
func (f *RealFIFO) takeBatchLocked() []Delta {
	deltas := make([]Delta, f.batchLenLocked())
	f.items.PopFrontInto(deltas)
	return deltas
}

// batchLenLocked measures the run of deltas at the head that form one batch:
// it ends before a key seen earlier in the run (by hash, so a collision
// only ends it early) and after a delta without a key.
func (f *RealFIFO) batchLenLocked() int {
	limit := min(f.items.Len(), realFIFOBatchSize)
	if f.sync.initial > 0 {
		limit = min(limit, f.sync.initial)
	}
	if limit == 1 || !isBatchable(f.items.At(0).Type) {
		return 1
	}
	f.batchSeen.reset(limit)
	for i := 0; i < limit; i++ {
		d := f.items.At(i)
		if !isBatchable(d.Type) {
			return i
		}
		id, err := f.keys.identOf(d.Object)
		if err != nil {
			return i + 1
		}
		if !f.batchSeen.add(identHash(f.keySeed, id)) {
			return i
		}
	}
	return limit
}

// identHash hashes id, never to 0. Equal idents hash alike; unequal ones
// that collide only end a batch early.
func identHash(seed maphash.Seed, id queueIdent) uint64 {
	h := bits.RotateLeft64(maphash.String(seed, id.namespace), 29) ^ maphash.String(seed, id.name)
	if id.slash {
		h = ^h
	}
	return max(h, 1)
}

// hashSet is a set of nonzero hashes in an open-addressing table, emptied
// and sized for each batch.
type hashSet struct{ slots []uint64 }

// reset empties the set and makes room for n hashes at most half full.
func (s *hashSet) reset(n int) {
	size := 1 << bits.Len(uint(2*n-1))
	if cap(s.slots) < size {
		s.slots = make([]uint64, size)
		return
	}
	s.slots = s.slots[:size]
	clear(s.slots)
}

// add inserts h and reports whether it was absent.
func (s *hashSet) add(h uint64) bool {
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = h
			return true
		case h:
			return false
		}
	}
}

// isBatchable reports whether deltas of type t may share a batch: per-object
// changes can, whole-queue events (ReplacedAll, SyncAll, Bookmark) cannot.
func isBatchable(t DeltaType) bool {
	switch t {
	case Added, Updated, Deleted, Replaced, Sync:
		return true
	}
	return false
}

// waitLocked blocks until a delta is queued; false means the queue is
// closed and empty.
func (f *RealFIFO) waitLocked() bool {
	for f.items.Len() == 0 {
		if f.closed {
			return false
		}
		f.cond.Wait()
	}
	return true
}

// releaseForProcessingLocked releases the lock for the processing that
// follows when UnlockWhileProcessing is set, and reports whether it did.
// With two batches or more still queued, client-go keeps its lock for the
// processing, so that a slow consumer throttles its producers instead of
// letting the queue grow without bound. This queue holds producers back
// the same way, in waitForRoomLocked, but without the lock: the consumer
// never waits for a producer to hand the lock back, and HasSynced, Close
// and IsClosed answer at once.
func (f *RealFIFO) releaseForProcessingLocked() bool {
	if !f.unlockWhileProcessing {
		return false
	}
	f.holdingBack = f.items.Len() >= 2*realFIFOBatchSize
	f.mu.Unlock()
	return true
}

// reacquireAfterProcessing takes the lock back and lets held-back
// producers go on.
func (f *RealFIFO) reacquireAfterProcessing() {
	f.mu.Lock()
	if f.holdingBack {
		f.holdingBack = false
		f.cond.Broadcast()
	}
}

// waitForRoomLocked holds a producer back while the consumer processes a
// batch with a long backlog; see releaseForProcessingLocked. Close lets
// every producer through, as writes to a closed queue are still accepted.
func (f *RealFIFO) waitForRoomLocked() {
	for f.holdingBack && !f.closed {
		f.cond.Wait()
	}
}

// processingTimer measures one processing call, for the latency metric and
// for the slow-handler log. The clock is read only when one of them needs it.
type processingTimer struct {
	start time.Time
	depth int
}

func (f *RealFIFO) startProcessing(depth int) processingTimer {
	if !f.measureLatency && depth <= slowProcessingDepth {
		return processingTimer{depth: depth}
	}
	return processingTimer{start: time.Now(), depth: depth}
}

// done records the processing of n deltas starting with first.
func (t processingTimer) done(f *RealFIFO, first Delta, n int) {
	if t.start.IsZero() {
		return
	}
	elapsed := time.Since(t.start)
	f.metrics.latency.Observe(elapsed.Seconds())
	limit := min(slowProcessing*time.Duration(n), time.Second)
	if t.depth <= slowProcessingDepth || elapsed < limit {
		return
	}
	id, _ := f.keys.keyOf(first)
	kv := []interface{}{"id", id, "depth", t.depth, "batchSize", n, "duration", elapsed,
		"reason", "slow event handlers blocking the queue"}
	if gvr := f.identifier.GroupVersionResource(); !gvr.Empty() {
		kv = append(kv, "resource", gvr)
	}
	f.logger.Info("Slow processing of popped deltas", kv...)
}

// HasSyncedChecker returns the queue itself, whose Done channel closes when
// HasSynced becomes true.
func (f *RealFIFO) HasSyncedChecker() DoneChecker { return f }

// Name returns the queue's name, as used in logs and by HasSyncedChecker.
func (f *RealFIFO) Name() string { return f.name }

// Transformer returns the queue's TransformFunc, so that a Reflector can
// apply the same transformation to the objects it keeps itself.
func (f *RealFIFO) Transformer() TransformFunc { return f.transformer }

// informerQueueOptions is what an informer knows when it builds its queue.
type informerQueueOptions struct {
	logger          klog.Logger
	objectType      interface{}
	store           KeyListerGetter
	transform       TransformFunc
	identifier      InformerNameAndResource
	metricsProvider InformerMetricsProvider
}

// newInformerQueue builds the queue between an informer's Reflector and its
// store, as the client-go feature gates select at the time of the call:
// RealFIFO unless InOrderInformers is off (then a DeltaFIFO reporting
// Replaced deltas); with AtomicFIFO an atomic RealFIFO that emits bookmarks
// and unlocks while processing per UnlockWhileProcessingFIFO; without it a
// RealFIFO that consults the store. It also returns the queue's logger.
func newInformerQueue(opts informerQueueOptions) (klog.Logger, Queue) {
	gates := clientfeatures.FeatureGates()
	logger := opts.logger
	if !gates.Enabled(clientfeatures.InOrderInformers) {
		f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{
			Logger:                &logger,
			Name:                  fmt.Sprintf("DeltaFIFO %T", opts.objectType),
			KnownObjects:          opts.store,
			EmitDeltaTypeReplaced: true,
			Transformer:           opts.transform,
		})
		return f.logger, f
	}
	ro := RealFIFOOptions{
		Logger:          &logger,
		Name:            fmt.Sprintf("RealFIFO %T", opts.objectType),
		KeyFunction:     MetaNamespaceKeyFunc,
		Transformer:     opts.transform,
		Identifier:      opts.identifier,
		MetricsProvider: opts.metricsProvider,
	}
	if gates.Enabled(clientfeatures.AtomicFIFO) {
		ro.AtomicEvents = true
		ro.EmitDeltaTypeBookmark = true
		ro.UnlockWhileProcessing = gates.Enabled(clientfeatures.UnlockWhileProcessingFIFO)
	} else {
		ro.KnownObjects = opts.store
	}
	f := NewRealFIFOWithOptions(ro)
	f.leaveOutFailures = true
	return f.logger, f
}
