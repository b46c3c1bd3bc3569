package cache

import (
	"errors"
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/fanout"
)

// deltaApplier is an informer's processing step: the store applies each
// popped batch of deltas and returns what changed, and tell is told. Built
// once, by newDeltaApplier.
type deltaApplier struct {
	logger klog.Logger
	store  *cache
	// tell hands a batch's changes on, in order: to the shared informer's
	// fan-out, or to a single handler (tellHandler).
	tell func([]fanout.Notification)
	// applied, when set, is told each batch of deltas the store applied,
	// or could not (a warm restart's journal).
	applied appliedFunc
}

// newDeltaApplier returns the applier of deltas to store, telling tell
// what changed and applied (if not nil) how each batch went.
func newDeltaApplier(logger klog.Logger, store *cache, tell func([]fanout.Notification), applied appliedFunc) deltaApplier {
	return deltaApplier{logger: logger, store: store, tell: tell, applied: applied}
}

// tellHandler tells h each change, in order.
func tellHandler(h ResourceEventHandler) func([]fanout.Notification) {
	return func(changes []fanout.Notification) {
		for i := range changes {
			changes[i].CallOn(h)
		}
	}
}

var errNotDeltas = errors.New("object given as Process argument is not Deltas")

// process is a ProcessFunc: obj must be Deltas.
func (a deltaApplier) process(obj interface{}, isInInitialList bool) error {
	deltas, ok := obj.(Deltas)
	if !ok {
		return a.refused(nil, errNotDeltas)
	}
	return a.apply(deltas, isInInitialList)
}

// apply applies deltas oldest first, each told to the handler before the
// next is applied; a store error stops at that delta.
func (a deltaApplier) apply(deltas Deltas, isInInitialList bool) error {
	for i := range deltas {
		if err := a.applyAndTell(deltas[i:i+1], isInInitialList); err != nil {
			return err
		}
	}
	return nil
}

// processBatch is a ProcessBatchFunc: the store writes the batch at once
// and the handler is told, afterwards, about the writes that succeeded.
func (a deltaApplier) processBatch(deltas []Delta, isInInitialList bool) error {
	if err := batchable(deltas); err != nil {
		return a.refused(deltas, err)
	}
	return a.applyAndTell(deltas, isInInitialList)
}

// refused tells applied of deltas the store was not given, and returns err.
func (a deltaApplier) refused(deltas []Delta, err error) error {
	if a.applied != nil {
		a.applied(deltas, nil, err)
	}
	return err
}

// applyAndTell has the store apply deltas and tells the handler what
// changed, even when some delta failed.
func (a deltaApplier) applyAndTell(deltas []Delta, isInInitialList bool) error {
	buf := getChangeBuffer()
	defer buf.release()
	changes, dropped, err := a.store.applyDeltas(deltas, isInInitialList, buf.changes, a.applied)
	buf.changes = changes
	for _, d := range dropped {
		identity, cause := withoutObject(d)
		utilruntime.HandleErrorWithLogger(a.logger, cause, "Object from a relist not stored", identity...)
	}
	a.tell(changes)
	return err
}

// changeBuffer is apply's slice of changes, pooled because a busy informer
// would otherwise allocate one for every batch. Nothing keeps it past the
// batch: listeners copy each change.
type changeBuffer struct{ changes []fanout.Notification }

var changeBufferPool = sync.Pool{New: func() any { return new(changeBuffer) }}

func getChangeBuffer() *changeBuffer { return changeBufferPool.Get().(*changeBuffer) }

// maxPooledChanges bounds the buffer kept for the next batch: a relist's
// changes (one per object) are not worth pinning.
const maxPooledChanges = 4096

// release empties the buffer, so the pool pins no object, and returns it.
func (b *changeBuffer) release() {
	clear(b.changes)
	b.changes = b.changes[:0]
	if cap(b.changes) > maxPooledChanges {
		b.changes = nil
	}
	changeBufferPool.Put(b)
}
