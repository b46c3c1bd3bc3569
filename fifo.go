package cache

import (
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/openinformer/cache/internal/deque"
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

// queueIdent is a comparable stand-in for an object's key: two objects have
// equal idents exactly when their keys are equal. For namespaced objects it
// is built from the strings already inside the object, so comparing keys in
// a batch allocates nothing.
type queueIdent struct {
	namespace string
	name      string
	slash     bool
}

// identOfKey splits key at its first "/"; the split is injective because
// slash records whether there was one.
func identOfKey(key string) queueIdent {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return queueIdent{namespace: key[:i], name: key[i+1:], slash: true}
	}
	return queueIdent{name: key}
}

// queueKeyer computes keys for the queues. When the key function is one of
// this package's namespace/name functions it knows how keys are formed, so it
// can check that a key exists, or compare keys, without building the string.
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

// keyOf returns the key of obj; a tombstone carries its own key.
func (k queueKeyer) keyOf(obj interface{}) (string, error) {
	obj, err := k.unwrap(obj)
	if err != nil {
		return "", err
	}
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	return k.keyFunc(obj)
}

// check returns the error keyOf would return, without building the key when
// the key function is known.
func (k queueKeyer) check(obj interface{}) error {
	if !k.metaKeys {
		_, err := k.keyOf(obj)
		return err
	}
	obj, err := k.unwrap(obj)
	if err != nil {
		return err
	}
	switch obj.(type) {
	case DeletedFinalStateUnknown, ExplicitKey:
		return nil
	}
	_, err = accessor(obj)
	return err
}

// identOf returns the ident of obj's key.
func (k queueKeyer) identOf(obj interface{}) (queueIdent, error) {
	if k.metaKeys {
		if o, err := k.unwrap(obj); err == nil {
			if id, ok := metaIdent(o); ok {
				return id, nil
			}
		}
	}
	key, err := k.keyOf(obj)
	if err != nil {
		return queueIdent{}, err
	}
	return identOfKey(key), nil
}

// metaIdent reads the ident straight from an object's metadata when its
// namespace/name key splits back into exactly those two parts.
func metaIdent(obj interface{}) (queueIdent, bool) {
	switch obj.(type) {
	case DeletedFinalStateUnknown, ExplicitKey:
		return queueIdent{}, false
	}
	m, err := accessor(obj)
	if err != nil {
		return queueIdent{}, false
	}
	ns, name := m.GetNamespace(), m.GetName()
	if strings.IndexByte(ns, '/') >= 0 || (ns == "" && strings.IndexByte(name, '/') >= 0) {
		return queueIdent{}, false
	}
	return queueIdent{namespace: ns, name: name, slash: ns != ""}, true
}

// FIFO is a queue of the latest version of each object. A key is queued
// once and keeps its place however often its object changes; Pop hands out
// only the newest object. It suits work that only needs the current state.
type FIFO struct {
	queueCore
	items map[string]interface{}
	// queue holds keys in pop order. A key is appended when it gains an
	// object, so a deleted and re-added key can appear twice; the stale
	// entry is skipped by Pop.
	queue   deque.Deque[string]
	keyFunc KeyFunc
}

var (
	_ Queue       = &FIFO{}
	_ DoneChecker = &FIFO{}
)

// NewFIFO returns an empty FIFO keyed by keyFunc.
func NewFIFO(keyFunc KeyFunc) *FIFO {
	f := &FIFO{items: map[string]interface{}{}, keyFunc: keyFunc}
	f.initCore()
	return f
}

// Add stores obj as the latest version of its key and queues the key
// unless it is queued already.
func (f *FIFO) Add(obj interface{}) error {
	key, err := f.keyOf(obj)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync.markPopulated()
	if _, ok := f.items[key]; !ok {
		f.queue.PushBack(key)
	}
	f.items[key] = obj
	f.cond.Broadcast()
	return nil
}

// Update is Add.
func (f *FIFO) Update(obj interface{}) error { return f.Add(obj) }

// Delete forgets obj's key. A queued key stays queued: Pop skips it, but it
// still counts towards the initial population.
func (f *FIFO) Delete(obj interface{}) error {
	key, err := f.keyOf(obj)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync.markPopulated()
	delete(f.items, key)
	return nil
}

func (f *FIFO) keyOf(obj interface{}) (string, error) {
	if f.keyFunc == nil {
		return "", KeyError{Obj: obj, Err: errNilKeyFunc}
	}
	key, err := f.keyFunc(obj)
	if err != nil {
		return "", KeyError{Obj: obj, Err: err}
	}
	return key, nil
}

// errNilKeyFunc is returned by a FIFO built without a key function, where
// client-go would panic on the nil call.
var errNilKeyFunc = errors.New("queue has no key function")

// Replace makes list the whole content of the queue: every listed key is
// queued (in list order, each once; the last object of a key wins) and
// everything else is dropped. The resource version is not used.
func (f *FIFO) Replace(list []interface{}, _ string) error {
	items := make(map[string]interface{}, len(list))
	keys := make([]string, 0, len(list))
	for _, obj := range list {
		key, err := f.keyOf(obj)
		if err != nil {
			return err
		}
		if _, dup := items[key]; !dup {
			keys = append(keys, key)
		}
		items[key] = obj
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sync.firstReplace(len(items))
	f.items = items
	f.queue.Reset()
	for _, key := range keys {
		f.queue.PushBack(key)
	}
	if len(keys) > 0 {
		f.cond.Broadcast()
	}
	return nil
}

// Resync queues every stored key that is not queued, in key order.
func (f *FIFO) Resync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	queued := make(map[string]struct{}, f.queue.Len())
	f.queue.Each(func(key string) bool {
		queued[key] = struct{}{}
		return true
	})
	var missing []string
	for key := range f.items {
		if _, ok := queued[key]; !ok {
			missing = append(missing, key)
		}
	}
	// Sorted, so that a resync is reproducible.
	slices.Sort(missing)
	for _, key := range missing {
		f.queue.PushBack(key)
	}
	if f.queue.Len() > 0 {
		f.cond.Broadcast()
	}
	return nil
}

// Pop waits for a queued key that still has an object, removes it and calls
// process with the object and whether it belongs to the initial list, under
// the queue lock. Deleted keys are skipped (and counted as delivered). The
// initial list counts as delivered once Pop returns. An error from
// process is returned; the object is not requeued. Once the queue is closed
// and empty, Pop returns ErrFIFOClosed.
func (f *FIFO) Pop(process PopProcessFunc) (interface{}, error) {
	if process == nil {
		return nil, errNilProcessFunc
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		for f.queue.Len() == 0 {
			if f.closed {
				return nil, ErrFIFOClosed
			}
			f.cond.Wait()
		}
		initial := !f.sync.synced
		key, _ := f.queue.PopFront()
		if f.sync.initial > 0 {
			// Counted now, but only declared synced when Pop returns, so
			// items popped in the same call stay in the initial list.
			f.sync.initial--
			defer f.sync.check()
		}
		obj, ok := f.items[key]
		if !ok {
			continue
		}
		delete(f.items, key)
		return obj, process(obj, initial)
	}
}

// HasSyncedChecker returns the queue itself, whose Done channel closes when
// HasSynced becomes true.
func (f *FIFO) HasSyncedChecker() DoneChecker { return f }

// Name returns "FIFO", the name HasSyncedChecker reports.
func (f *FIFO) Name() string { return "FIFO" }
