package cache

import (
	"errors"
	"slices"

	"github.com/openinformer/cache/internal/deque"
)

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
