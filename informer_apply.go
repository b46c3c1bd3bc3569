package cache

import (
	"errors"
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// deltaApplier is an informer's processing step: the store applies each
// popped batch of deltas and returns what changed, and the handler is told.
type deltaApplier struct {
	logger  klog.Logger
	handler ResourceEventHandler
	store   Store
}

var errNotDeltas = errors.New("object given as Process argument is not Deltas")

// process is a ProcessFunc: obj must be Deltas.
func (a deltaApplier) process(obj interface{}, isInInitialList bool) error {
	deltas, ok := obj.(Deltas)
	if !ok {
		return errNotDeltas
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
		return err
	}
	return a.applyAndTell(deltas, isInInitialList)
}

// applyAndTell has the store apply deltas and tells the handler what
// changed, even when some delta failed.
func (a deltaApplier) applyAndTell(deltas []Delta, isInInitialList bool) error {
	buf := getChangeBuffer()
	defer buf.release()
	changes, dropped, err := deltaStoreOf(a.store, a.logger).applyDeltas(deltas, isInInitialList, buf.changes)
	buf.changes = changes
	for _, d := range dropped {
		identity, cause := withoutObject(d)
		utilruntime.HandleErrorWithLogger(a.logger, cause, "Object from a relist not stored", identity...)
	}
	a.tell(changes)
	return err
}

// batchNotifier is a handler that takes a batch's changes at once: the
// shared informer's fan-out.
type batchNotifier interface {
	notifyBatch([]notification)
}

// tell hands changes to the handler in order.
func (a deltaApplier) tell(changes []notification) {
	if b, ok := a.handler.(batchNotifier); ok {
		b.notifyBatch(changes)
		return
	}
	for i := range changes {
		changes[i].callOn(a.handler)
	}
}

// changeBuffer is apply's slice of changes, pooled because a busy informer
// would otherwise allocate one for every batch. Nothing keeps it past the
// batch: listeners copy each change.
type changeBuffer struct{ changes []notification }

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
