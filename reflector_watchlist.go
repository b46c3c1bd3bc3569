package cache

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/consistencydetector"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openinformer/cache/internal/keyparts"
	"github.com/openinformer/cache/internal/reflectorfsm"
)

// watchList opens a watch-list stream and collects its initial events.
// On success the stream stays open in run.w for the watch phase.
func (run *reflectorRun) watchList(act reflectorfsm.Action) reflectorfsm.Input {
	r := run.r
	run.streamed = nil
	start := r.clock.Now()
	w, err := openedOrError(r.listerWatcher.WatchWithContext(run.ctx, act.Options))
	if err != nil {
		run.logWatchListRetry(err)
		return reflectorfsm.WatchListDone{Err: err}
	}
	run.w = w
	buf := newStreamBuffer(run.r.store, run.r.queue, run.r.prehold)
	synced, err := run.consume(start, buf, true, act.Patience)
	switch {
	case err == errReflectorStopped:
		run.stopWatch()
		return nil
	case err == errQuietStream:
		run.stopWatch()
		run.logger.Info("Warning: watch-list stream went quiet without the bookmark that ends its initial events; ending it", "reflector", r.name, "type", r.typeDescription, "quietFor", act.Patience)
		return reflectorfsm.WatchListDone{Quiet: true, Lasted: r.clock.Since(start)}
	case err != nil || !synced:
		run.stopWatch()
		run.logWatchListRetry(err)
		return reflectorfsm.WatchListDone{Err: err, Lasted: r.clock.Since(start)}
	}
	run.streamed = buf
	return reflectorfsm.WatchListDone{Synced: true, ResourceVersion: buf.rv}
}

func (run *reflectorRun) logWatchListRetry(err error) {
	if c := reflectorfsm.Classify(err); c == reflectorfsm.ClassTooManyRequests || c == reflectorfsm.ClassConnectionRefused {
		run.logger.V(2).Info("watch-list failed - backing off", "reflector", run.r.name, "type", run.r.typeDescription, "err", err)
	}
}

// newStreamBuffer returns the buffer for a stream into store. The objects
// get the store's own transform as they arrive, as they would in a store,
// and, into a queue of this package (q), are held by prehold (when not
// nil).
func newStreamBuffer(store ReflectorStore, q *pretransformed, prehold preholdFunc) *watchListBuffer {
	if q != nil {
		b := newWatchListBuffer(q.transform)
		b.queue = q
		if !consistencydetector.IsDataConsistencyDetectionForWatchListEnabled() {
			// The detector compares the collected objects with a LIST's.
			b.prehold = prehold
		}
		return b
	}
	if s, ok := store.(TransformingStore); ok {
		return newWatchListBuffer(s.Transformer())
	}
	return newWatchListBuffer(nil)
}

// replaceStreamed hands the collected initial state to the store in one
// Replace. If that fails the stream is closed and the machine falls back to
// a LIST.
func (run *reflectorRun) replaceStreamed(rv string) reflectorfsm.Replaced {
	buf := run.streamed
	run.streamed = nil
	items := buf.finish()
	r := run.r
	if consistencydetector.IsDataConsistencyDetectionForWatchListEnabled() {
		consistencydetector.CheckDataConsistency(run.ctx, r.name, rv, r.listerWatcher.ListWithContext, consistencydetector.TransformFunc(buf.transform), metav1.ListOptions{},
			func() []interface{} { return items })
	}
	if err := buf.replaceInto(r.store, items, rv); err != nil {
		run.stopWatch()
		return reflectorfsm.Replaced{Err: fmt.Errorf("unable to sync watch-list result: %w", err)}
	}
	return reflectorfsm.Replaced{}
}

// watchListBuffer collects the initial state of a watch-list stream with
// the semantics of a keyed store (last write per key wins, deletes remove)
// at a fraction of a store's memory: the objects go into a plain slice in
// arrival order. Servers send initial events in key order, so while keys
// keep increasing no key can repeat and no index is needed; only the last
// key is remembered, as references into the last object. The first event
// that breaks the order (or modifies or deletes) builds a key→slot map once
// and the buffer continues through it.
type watchListBuffer struct {
	transform TransformFunc
	// queue is set when the store is one of this package's queues: it then
	// reports the objects whose transform fails, and takes the collected
	// objects without transforming them again.
	queue *pretransformed
	// prehold, when set, holds each object as the store will, so that the
	// buffer keeps the objects encoded; see preheld.
	prehold preholdFunc
	items   []interface{}
	// keys holds the key of each item while there is a transformer, whose
	// output might no longer yield the key of its input, or a preholder
	// whose store keys an item otherwise: a preheld item carries its store
	// key, and while that is the item's key the buffer keeps none (40 B
	// per item, 0.8 MB of a 20k-object sync).
	keys    []string
	last    keyparts.Parts
	hasLast bool
	slot    map[string]int
	rv      string
}

func newWatchListBuffer(transform TransformFunc) *watchListBuffer {
	return &watchListBuffer{transform: transform}
}

func (b *watchListBuffer) add(obj runtime.Object) error {
	name, err := watchListObjectName(obj)
	if err != nil {
		return err
	}
	stored, ok := b.transformed(obj)
	switch {
	case !ok:
	case b.slot != nil || (b.hasLast && b.last.Compare(name) >= 0):
		b.put(name.Key(), stored)
	default:
		b.items = append(b.items, stored)
		b.keepKey(name, stored)
		b.last, b.hasLast = name, true
	}
	return nil
}

// keepKey records the key of the item just appended, name's, unless the
// buffer can read it back from the item. Once a preheld item's store key
// differs from its name's key, every item's key is kept.
func (b *watchListBuffer) keepKey(name keyparts.Parts, stored interface{}) {
	if b.transform == nil && b.prehold == nil {
		return
	}
	if key, ok := heldKey(stored); ok && b.keys == nil && name.Is(key) {
		return
	}
	if b.keys == nil && b.prehold != nil {
		earlier := b.items[:len(b.items)-1]
		b.keys = make([]string, len(earlier), cap(b.items))
		for i, obj := range earlier {
			b.keys[i], _ = heldKey(obj)
		}
	}
	b.keys = append(b.keys, name.Key())
}

func (b *watchListBuffer) update(obj runtime.Object) error {
	name, err := watchListObjectName(obj)
	if err != nil {
		return err
	}
	if stored, ok := b.transformed(obj); ok {
		b.put(name.Key(), stored)
	}
	return nil
}

func (b *watchListBuffer) delete(obj runtime.Object) error {
	name, err := watchListObjectName(obj)
	if err != nil {
		return err
	}
	key := name.Key()
	b.index()
	if i, ok := b.slot[key]; ok {
		b.items[i] = nil
		delete(b.slot, key)
	}
	return nil
}

// watchListObjectName is the parts of the object's store key, which refer
// to the object's own strings instead of allocating a key.
func watchListObjectName(obj runtime.Object) (keyparts.Parts, error) {
	p, err := keyparts.Meta(obj)
	if err != nil {
		return keyparts.Parts{}, KeyError{Obj: obj, Err: err}
	}
	return p, nil
}

// bookmark ignores bookmarks: a buffer is not a bookmark store.
func (b *watchListBuffer) bookmark(string) error { return nil }

// observe keeps the version of the latest event past the initial Added
// events; after the end bookmark that is the bookmark's version.
func (b *watchListBuffer) observe(rv string, pastInitialAdds bool) {
	if pastInitialAdds {
		b.rv = rv
	}
}

// transformed returns obj as the buffer keeps it, or false when it is left
// out. An object whose transform (or hold) fails is left out and reported
// by a queue of this package, like a failed object of a LIST; another store
// gets it untransformed, as its Replace transforms every object again and
// decides.
func (b *watchListBuffer) transformed(obj runtime.Object) (interface{}, bool) {
	if b.prehold != nil {
		held, err := holdForQueue(b.transform, b.prehold, obj)
		if err != nil {
			b.queue.leaveOut(obj, err)
			return nil, false
		}
		return held, true
	}
	if b.transform == nil {
		return obj, true
	}
	out, err := b.transform(obj)
	switch {
	case err == nil:
		return out, true
	case b.queue == nil:
		return obj, true
	}
	b.queue.leaveOut(obj, err)
	return nil, false
}

// replaceInto hands the collected objects to store in one Replace; a queue
// of this package takes them as already transformed.
func (b *watchListBuffer) replaceInto(store ReflectorStore, items []interface{}, rv string) error {
	if b.queue != nil {
		return b.queue.replace(items, rv)
	}
	return store.Replace(items, rv)
}

func (b *watchListBuffer) put(key string, obj interface{}) {
	b.index()
	if i, ok := b.slot[key]; ok {
		b.items[i] = obj
		return
	}
	b.slot[key] = len(b.items)
	b.items = append(b.items, obj)
}

// index switches the buffer to map mode, once. A preheld item carries its
// key; without a transformer the keys are read back from the buffered
// objects themselves.
func (b *watchListBuffer) index() {
	if b.slot != nil {
		return
	}
	b.slot = make(map[string]int, len(b.items))
	for i, obj := range b.items {
		if b.keys != nil {
			b.slot[b.keys[i]] = i
			continue
		}
		if key, ok := heldKey(obj); ok {
			b.slot[key] = i
			continue
		}
		if p, err := keyparts.Meta(obj); err == nil {
			b.slot[p.Key()] = i
		}
	}
	b.keys = nil
}

// finish returns the collected objects, without the deleted ones, and
// releases the buffer's bookkeeping.
func (b *watchListBuffer) finish() []interface{} {
	items := b.items
	if b.slot != nil {
		kept := items[:0]
		for _, obj := range items {
			if obj != nil {
				kept = append(kept, obj)
			}
		}
		clear(items[len(kept):])
		items = kept
	}
	b.items, b.keys, b.slot = nil, nil, nil
	b.last, b.hasLast = keyparts.Parts{}, false
	return items
}

// initialEventsWarning logs every 10s while a watch-list stream has not yet
// delivered its end bookmark, so a stalled initial sync is visible, and
// tells when the stream has been quiet for its patience. It is inert for
// plain watches and for clocks without tickers.
type initialEventsWarning struct {
	ticker    clock.Ticker
	clock     clock.Clock
	logger    klog.Logger
	name      string
	start     time.Time
	lastEvent time.Time
	// patience is how long the stream may go without an event (counted
	// from start before the first one); zero waits forever.
	patience time.Duration
}

const initialEventsWarnEvery = 10 * time.Second

func newInitialEventsWarning(logger klog.Logger, name string, c clock.Clock, start time.Time, active bool, patience time.Duration) *initialEventsWarning {
	w := &initialEventsWarning{clock: c, logger: logger, name: name, start: start, patience: patience}
	if !active {
		return w
	}
	if tc, ok := c.(clock.WithTicker); ok {
		w.ticker = tc.NewTicker(initialEventsWarnEvery)
	} else {
		logger.Info("Warning: clock does not support WithTicker interface but exitOnInitialEventsEndBookmark was requested")
	}
	return w
}

func (w *initialEventsWarning) c() <-chan time.Time {
	if w.ticker == nil {
		return nil
	}
	return w.ticker.C()
}

func (w *initialEventsWarning) stop() {
	if w.ticker != nil {
		w.ticker.Stop()
	}
}

func (w *initialEventsWarning) observe(t time.Time) { w.lastEvent = t }

// check logs the warning that is due and reports whether the stream has
// been quiet for its patience.
func (w *initialEventsWarning) check() (quiet bool) {
	last := w.lastEvent
	if last.IsZero() {
		last = w.start
	}
	if w.patience > 0 && w.clock.Since(last) >= w.patience {
		return true
	}
	var err error
	switch {
	case w.lastEvent.IsZero():
		err = fmt.Errorf("%s: awaiting required bookmark event for initial events stream, no events received for %v", w.name, w.clock.Since(w.start))
	case w.clock.Since(w.lastEvent) >= initialEventsWarnEvery:
		err = fmt.Errorf("%s: hasn't received required bookmark event marking the end of initial events stream, received last event %v ago", w.name, w.clock.Since(w.lastEvent))
	}
	if err != nil {
		w.logger.Info("Warning: event bookmark expired", "err", err)
	}
	return false
}
