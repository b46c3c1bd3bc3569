package cache

import (
	"fmt"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/deque"
)

// DeltaFIFO is a queue of objects, each with the list of changes (Deltas)
// seen since it was last popped. Keys pop in the order they were first
// queued; a key that is queued again keeps its place. Pop hands out all of a
// key's deltas at once.
//
// With KnownObjects (the consumer's store) a DeltaFIFO also infers deletions
// on Replace and produces Sync deltas on Resync.
type DeltaFIFO struct {
	logger klog.Logger
	name   string

	queueCore
	items map[string]Deltas
	// itemsPeak is the most keys items held since it was last allocated. Go
	// maps never shrink, so once a large queue drains, items is replaced.
	itemsPeak int
	queue     deque.Deque[string]

	keys         queueKeyer
	knownObjects KeyListerGetter
	transformer  TransformFunc
	// replaceType is the delta type Replace queues for listed objects.
	replaceType DeltaType
}

var (
	_ Queue             = &DeltaFIFO{}
	_ TransformingStore = &DeltaFIFO{}
	_ DoneChecker       = &DeltaFIFO{}
)

// NewDeltaFIFO returns a DeltaFIFO keyed by keyFunc that consults
// knownObjects (which may be nil). Replace queues Sync deltas, so consumers
// cannot tell a relist from a resync.
//
// Deprecated: use NewDeltaFIFOWithOptions, preferably with
// EmitDeltaTypeReplaced.
func NewDeltaFIFO(keyFunc KeyFunc, knownObjects KeyListerGetter) *DeltaFIFO {
	return NewDeltaFIFOWithOptions(DeltaFIFOOptions{KeyFunction: keyFunc, KnownObjects: knownObjects})
}

// NewDeltaFIFOWithOptions returns a DeltaFIFO configured by opts; the key
// function defaults to MetaNamespaceKeyFunc.
func NewDeltaFIFOWithOptions(opts DeltaFIFOOptions) *DeltaFIFO {
	f := &DeltaFIFO{
		logger:       klog.Background(),
		name:         "DeltaFIFO",
		items:        map[string]Deltas{},
		keys:         newQueueKeyer(opts.KeyFunction),
		knownObjects: opts.KnownObjects,
		transformer:  opts.Transformer,
		replaceType:  Sync,
	}
	if opts.EmitDeltaTypeReplaced {
		f.replaceType = Replaced
	}
	if opts.Logger != nil {
		f.logger = *opts.Logger
	}
	if opts.Name != "" {
		f.name = opts.Name
	}
	f.logger = klog.LoggerWithName(f.logger, f.name)
	f.initCore()
	return f
}

// KeyOf returns the key of obj: for Deltas the key of its newest object, for
// a DeletedFinalStateUnknown its Key, otherwise what the key function says.
func (f *DeltaFIFO) KeyOf(obj interface{}) (string, error) {
	return f.keys.keyOf(obj)
}

// Add queues an Added delta for obj.
func (f *DeltaFIFO) Add(obj interface{}) error { return f.write(Added, obj) }

// Update queues an Updated delta for obj.
func (f *DeltaFIFO) Update(obj interface{}) error { return f.write(Updated, obj) }

func (f *DeltaFIFO) write(t DeltaType, obj interface{}) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync.markPopulated()
	return f.enqueueLocked(t, obj, true)
}

// Delete queues a Deleted delta for obj, unless the object is unknown: not
// queued, and (with KnownObjects) positively absent from the known objects.
func (f *DeltaFIFO) Delete(obj interface{}) error {
	key, err := f.keys.keyOf(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync.markPopulated()
	if _, queued := f.items[key]; !queued {
		if f.knownObjects == nil {
			return nil
		}
		if _, known, err := f.knownObjects.GetByKey(key); err == nil && !known {
			return nil
		}
	}
	return f.enqueueLocked(Deleted, obj, true)
}

// enqueueLocked appends a delta to obj's key, transforming obj first unless
// told not to or it is a tombstone.
func (f *DeltaFIFO) enqueueLocked(t DeltaType, obj interface{}, transform bool) error {
	key, err := f.keys.keyOf(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	if transform && f.transformer != nil {
		if _, tombstone := obj.(DeletedFinalStateUnknown); !tombstone {
			if obj, err = f.transformer(obj); err != nil {
				return err
			}
		}
	}
	f.appendLocked(key, Delta{Type: t, Object: obj})
	return nil
}

// appendLocked adds d to key's deltas, queueing the key if it is new.
func (f *DeltaFIFO) appendLocked(key string, d Delta) {
	old, queued := f.items[key]
	if !queued {
		f.queue.PushBack(key)
		f.itemsPeak = max(f.itemsPeak, len(f.items)+1)
	}
	f.items[key] = dedupLastDeletion(append(old, d))
	f.cond.Broadcast()
}

// dedupLastDeletion collapses two trailing deletions into one. The observed
// deletion is kept over a tombstone, since it carries the final state; of
// two equal kinds the older one stays.
func dedupLastDeletion(ds Deltas) Deltas {
	n := len(ds)
	if n < 2 || ds[n-1].Type != Deleted || ds[n-2].Type != Deleted {
		return ds
	}
	if _, tombstone := ds[n-2].Object.(DeletedFinalStateUnknown); tombstone {
		ds[n-2] = ds[n-1]
	}
	ds[n-1] = Delta{}
	return ds[:n-1]
}

// Replace reports a relist: each listed object gets a Replaced delta (Sync
// unless EmitDeltaTypeReplaced), then every queued or known key missing from
// list gets a Deleted tombstone. The resource version is not used. An object
// whose key or transform fails is left out as if it were not listed and
// reported through utilruntime.HandleError; the others are queued all the
// same.
func (f *DeltaFIFO) Replace(list []interface{}, _ string) error {
	f.replace(list, f.transformer)
	return nil
}

// pretransformed is how f takes a list its transformer has already run
// on, such as a watch-list stream's initial state.
func (f *DeltaFIFO) pretransformed() *pretransformed {
	return &pretransformed{
		transform: f.transformer,
		replace: func(list []interface{}, _ string) error {
			f.replace(list, nil)
			return nil
		},
		leaveOut: f.leaveOutStreamed,
	}
}

// leaveOut reports err, the failure of one object of a relist, which is left
// out as if it were not listed: it must not cost the others.
func (f *DeltaFIFO) leaveOut(obj interface{}, err error) {
	reportLeftOut(f.logger, f.keys, obj, err)
}

// leaveOutStreamed is leaveOut for an object of a watch-list stream; it
// touches nothing the lock guards.
func (f *DeltaFIFO) leaveOutStreamed(obj interface{}, err error) { f.leaveOut(obj, err) }

func (f *DeltaFIFO) replace(list []interface{}, transform TransformFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.listedLocked(list, transform)
	f.reserveLocked(r.unqueued)
	left := r.leftOut
	for i, obj := range r.objs {
		if len(left) > 0 && left[0] == i {
			left = left[1:]
			continue
		}
		f.appendLocked(r.keys[i], Delta{Type: f.replaceType, Object: obj})
	}
	deletions := f.tombstoneQueuedLocked(r.listed) + f.tombstoneKnownLocked(r.listed)
	f.sync.firstReplace(len(r.listed) + deletions)
}

// listedRelist is a relist's list as DeltaFIFO.Replace queues it: the key and
// object of each position, except the positions in leftOut.
type listedRelist struct {
	keys    []string
	objs    []interface{}
	leftOut []int
	listed  map[string]struct{}
	// unqueued counts the listed keys with nothing queued yet.
	unqueued int
}

// listedLocked computes every key and transformation of a relist before
// anything is queued, leaving out (and reporting) the objects that fail.
func (f *DeltaFIFO) listedLocked(list []interface{}, transform TransformFunc) listedRelist {
	r := listedRelist{keys: make([]string, len(list)), objs: list, listed: make(map[string]struct{}, len(list))}
	if transform != nil {
		// A new slice: the caller's list is left as it is.
		r.objs = make([]interface{}, len(list))
	}
	for i, obj := range list {
		key, stored, err := f.keys.listedObject(obj, transform)
		if err != nil {
			f.leaveOut(obj, err)
			r.leftOut = append(r.leftOut, i)
			continue
		}
		r.keys[i], r.objs[i] = key, stored
		if _, dup := r.listed[key]; dup {
			continue
		}
		r.listed[key] = struct{}{}
		if _, queued := f.items[key]; !queued {
			r.unqueued++
		}
	}
	return r
}

// reserveLocked makes room for n new keys at once, so a relist allocates
// its queue (and, for an empty queue, its map) in one step.
func (f *DeltaFIFO) reserveLocked(n int) {
	f.queue.Grow(n)
	if len(f.items) == 0 && n > 0 {
		f.items = make(map[string]Deltas, n)
	}
}

// tombstoneQueuedLocked queues a tombstone for every queued key missing from
// listed, holding the key's newest object, and returns how many it queued.
func (f *DeltaFIFO) tombstoneQueuedLocked(listed map[string]struct{}) int {
	var missing []string
	f.queue.Each(func(key string) bool {
		if _, ok := listed[key]; !ok {
			missing = append(missing, key)
		}
		return true
	})
	for _, key := range missing {
		var last interface{}
		if n := f.items[key].Newest(); n != nil {
			last = n.Object
			if t, ok := last.(DeletedFinalStateUnknown); ok {
				last = t.Obj
			}
		}
		f.appendLocked(key, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: key, Obj: last}})
	}
	return len(missing)
}

// tombstoneKnownLocked queues a tombstone for every known key that is
// neither listed nor queued, and returns how many it queued.
func (f *DeltaFIFO) tombstoneKnownLocked(listed map[string]struct{}) int {
	if f.knownObjects == nil {
		return 0
	}
	n := 0
	for _, key := range f.knownObjects.ListKeys() {
		if _, ok := listed[key]; ok {
			continue
		}
		if len(f.items[key]) > 0 {
			continue
		}
		obj, exists, err := f.knownObjects.GetByKey(key)
		switch {
		case err != nil:
			utilruntime.HandleErrorWithLogger(f.logger, err, "Unexpected error during lookup, placing DeleteFinalStateUnknown marker without object", "key", key)
			obj = nil
		case !exists:
			f.logger.Info("Key does not exist in known objects store, placing DeleteFinalStateUnknown marker without object", "key", key)
			obj = nil
		}
		f.appendLocked(key, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: key, Obj: obj}})
		n++
	}
	return n
}

// Resync queues an untransformed Sync delta for every known object whose key
// has nothing queued. Without KnownObjects it does nothing.
func (f *DeltaFIFO) Resync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.knownObjects == nil {
		return nil
	}
	for _, key := range f.knownObjects.ListKeys() {
		if err := f.syncKeyLocked(key); err != nil {
			return err
		}
	}
	return nil
}

func (f *DeltaFIFO) syncKeyLocked(key string) error {
	obj, exists, err := f.knownObjects.GetByKey(key)
	switch {
	case err != nil:
		utilruntime.HandleErrorWithLogger(f.logger, err, "Unexpected error during lookup, unable to queue object for sync", "key", key)
		return nil
	case !exists:
		f.logger.Info("Key does not exist in known objects store, unable to queue object for sync", "key", key)
		return nil
	}
	id, err := f.keys.keyOf(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	if len(f.items[id]) > 0 {
		return nil
	}
	if err := f.enqueueLocked(Sync, obj, false); err != nil {
		return fmt.Errorf("couldn't queue object: %w", err)
	}
	return nil
}

// Pop waits for a key, removes it with all its deltas and calls process
// with them (a Deltas) and whether they belong to the initial list. The
// initial list is counted down before process runs, and process runs under
// the queue lock. An error from process is returned; the deltas are not
// requeued. Once the queue is closed and empty, Pop returns ErrFIFOClosed.
func (f *DeltaFIFO) Pop(process PopProcessFunc) (interface{}, error) {
	if process == nil {
		return nil, errNilProcessFunc
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.queue.Len() == 0 {
		if f.closed {
			return nil, ErrFIFOClosed
		}
		f.cond.Wait()
	}
	initial := !f.sync.synced
	key, _ := f.queue.PopFront()
	f.sync.consumed(1)
	deltas := f.items[key]
	delete(f.items, key)
	f.releaseDrainedMapLocked()
	var item interface{} = deltas
	depth := f.queue.Len()
	if depth <= slowProcessingDepth {
		return item, process(item, initial)
	}
	start := time.Now()
	err := process(item, initial)
	if elapsed := time.Since(start); elapsed >= slowProcessing {
		f.logger.Info("Slow processing of popped deltas", "id", key, "depth", depth, "duration", elapsed,
			"reason", "slow event handlers blocking the queue")
	}
	return item, err
}

// drainedMapReset is the peak size above which an emptied items map is
// reallocated rather than kept with its peak capacity.
const drainedMapReset = 1024

func (f *DeltaFIFO) releaseDrainedMapLocked() {
	if len(f.items) == 0 && f.itemsPeak > drainedMapReset {
		f.items = map[string]Deltas{}
		f.itemsPeak = 0
	}
}

// HasSyncedChecker returns the queue itself, whose Done channel closes when
// HasSynced becomes true.
func (f *DeltaFIFO) HasSyncedChecker() DoneChecker { return f }

// Name returns the queue's name, as used in logs and by HasSyncedChecker.
func (f *DeltaFIFO) Name() string { return f.name }

// Transformer returns the queue's TransformFunc, so that a Reflector can
// apply the same transformation to the objects it keeps itself.
func (f *DeltaFIFO) Transformer() TransformFunc { return f.transformer }
