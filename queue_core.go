package cache

import (
	"errors"
	"fmt"
	"sync"

	"github.com/openinformer/cache/internal/keyparts"
)

// errNilProcessFunc is returned by Pop and PopBatch when given no function to
// run, where client-go would panic on the nil call after losing the item.
var errNilProcessFunc = errors.New("queue: nil process function")

// queueSync tracks the initial population of a queue, shared by every FIFO:
// a queue is populated by its first Add/Update/Delete or its first Replace,
// which also records how many items form the initial list. The queue has
// synced once it is populated and that many items have been consumed; done
// is closed exactly once at that moment and never reopened.
type queueSync struct {
	done      chan struct{}
	synced    bool
	populated bool
	initial   int
}

func newQueueSync() queueSync {
	return queueSync{done: make(chan struct{})}
}

// queueCore is the lock, the wake-up signal and the sync bookkeeping that
// every FIFO of this package shares, with the methods that only touch them.
type queueCore struct {
	mu     sync.Mutex
	cond   sync.Cond
	closed bool
	sync   queueSync
}

// initCore must run before the queue is used.
func (q *queueCore) initCore() {
	q.cond.L = &q.mu
	q.sync = newQueueSync()
}

// Close wakes every waiting Pop. Queued items can still be popped; only
// when the queue is also empty does Pop return ErrFIFOClosed. Writes are
// still accepted.
func (q *queueCore) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// IsClosed reports whether Close was called.
func (q *queueCore) IsClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// HasSynced reports whether the queue has delivered its initial population:
// true after a first Add/Update/Delete, or once everything queued by the
// first Replace has been processed. It never turns false again.
func (q *queueCore) HasSynced() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.sync.synced
}

// Done returns a channel that is closed once HasSynced is true.
func (q *queueCore) Done() <-chan struct{} { return q.sync.done }

// markPopulated records a direct write. Without a prior Replace there is no
// initial list, so the queue counts as synced at once.
func (s *queueSync) markPopulated() {
	s.populated = true
	s.check()
}

// firstReplace records the size of the initial list; only the first
// population counts.
func (s *queueSync) firstReplace(count int) {
	if s.populated {
		return
	}
	s.populated = true
	s.initial = count
	s.check()
}

// consumed records that n items of the queue have been fully processed.
func (s *queueSync) consumed(n int) {
	if s.initial <= 0 {
		return
	}
	s.initial -= n
	s.check()
}

func (s *queueSync) check() {
	if s.populated && s.initial <= 0 && !s.synced {
		s.synced = true
		close(s.done)
	}
}

// pretransformed is how a queue of this package takes objects its
// transformer has already run on (a watch-list stream's, a held LIST's, a
// warm start's), so that each object is transformed once: as it arrives,
// to keep the collected state small. The queue builds it
// (RealFIFO.pretransformed, DeltaFIFO.pretransformed), and whoever built
// the queue hands it to the Reflector's constructor (reflectorHooks).
type pretransformed struct {
	transform TransformFunc
	// replace is the queue's Replace without running the transformer.
	replace func(list []interface{}, resourceVersion string) error
	// leaveOut reports an object whose transform failed; it is left out.
	leaveOut func(obj interface{}, err error)
}

// pretransformedOf is how store takes objects already transformed when it
// is one of this package's queues, built by their public constructors'
// callers around it; nil for any other store. Informers hand theirs to
// the constructor instead (newInformerQueue).
func pretransformedOf(store ReflectorStore) *pretransformed {
	switch q := store.(type) {
	case *RealFIFO:
		return q.pretransformed()
	case *DeltaFIFO:
		return q.pretransformed()
	}
	return nil
}

// queueKeyer computes keys for the queues. When the key function is one of
// this package's namespace/name functions, it reads a key's parts from the
// object's metadata, so a queue can check that a key exists, or compare and
// hash keys, without building the string.
type queueKeyer struct {
	keyFunc  KeyFunc
	metaKeys bool
	// unwrapDelta makes a bare Delta stand for its object, as RealFIFO's
	// keys do; DeltaFIFO hands a Delta to the key function unchanged.
	unwrapDelta bool
}

func newQueueKeyer(keyFunc KeyFunc) queueKeyer {
	if keyFunc == nil {
		keyFunc = MetaNamespaceKeyFunc
	}
	return queueKeyer{keyFunc: keyFunc, metaKeys: isMetaNamespaceKeyFunc(keyFunc)}
}

// unwrap returns the object whose key stands for obj: the newest object of a
// Deltas, the object of a Delta, or obj itself.
func (k queueKeyer) unwrap(obj interface{}) (interface{}, error) {
	switch d := obj.(type) {
	case Deltas:
		if len(d) == 0 {
			return nil, KeyError{Obj: obj, Err: ErrZeroLengthDeltasObject}
		}
		return d[len(d)-1].Object, nil
	case Delta:
		if k.unwrapDelta {
			return d.Object, nil
		}
	}
	return obj, nil
}

// partsOf returns the parts of obj's key; a tombstone carries its own key.
func (k queueKeyer) partsOf(obj interface{}) (keyparts.Parts, error) {
	obj, err := k.unwrap(obj)
	if err != nil {
		return keyparts.Parts{}, err
	}
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		return keyparts.Of(d.Key), nil
	}
	if k.metaKeys {
		return keyparts.Meta(obj)
	}
	key, err := k.keyFunc(obj)
	if err != nil {
		return keyparts.Parts{}, err
	}
	return keyparts.Of(key), nil
}

// keyOf returns the key of obj.
func (k queueKeyer) keyOf(obj interface{}) (string, error) {
	p, err := k.partsOf(obj)
	if err != nil {
		return "", err
	}
	return p.Key(), nil
}

// check returns the error keyOf would return, without building the key when
// the key function is known.
func (k queueKeyer) check(obj interface{}) error {
	_, err := k.partsOf(obj)
	return err
}

// listedObject returns the key of an object of a relist and the object as
// it is queued, transformed when transform is not nil.
func (k queueKeyer) listedObject(obj interface{}, transform TransformFunc) (string, interface{}, error) {
	key, err := k.keyOf(obj)
	if err != nil {
		return "", nil, KeyError{Obj: obj, Err: err}
	}
	if transform == nil {
		return key, obj, nil
	}
	stored, err := transform(obj)
	if err != nil {
		return "", nil, fmt.Errorf("couldn't enqueue object: %w", err)
	}
	return key, stored, nil
}
