package fake

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// preTimeoutBookmark is how long before a watch's deadline the API server sends a last bookmark.
const preTimeoutBookmark = 2 * time.Second

func (s *Server) watch(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(VerbWatch, ns, o)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := takeFault(&s.watchFaults); err != nil {
		return nil, err
	}
	if s.takeNilWatch() {
		return nil, nil
	}
	o.Watch = true
	q, err := s.parseQuery(ns, o)
	if err != nil {
		return nil, err
	}
	w := s.newWatcherLocked(ctx, q, o)
	initial, err := s.watchStartLocked(w, o)
	if err != nil {
		// Once a watch request is accepted, the API server reports a bad starting point as an
		// ERROR event on the stream, not as a failed request (cacher.Watch, newErrWatcher).
		w.fail(errorEvent(err))
	} else {
		w.queue = initial
		s.watchers[w] = struct{}{}
		s.takeInterrupt(w)
	}
	go w.run()
	return w, nil
}

// watchStartLocked returns the events a new watch starts with and sets the watcher's threshold:
// later events and bookmarks are only sent when newer than it (cacheWatcher.process).
//   - sendInitialEvents=true (watch-list): ADDED for the current state, then, with
//     allowWatchBookmarks, a BOOKMARK annotated k8s.io/initial-events-end at the current RV.
//   - no sendInitialEvents and RV "" or "0": ADDED for the current state (legacy semantics).
//   - sendInitialEvents=false and RV "" or "0": start now, no initial events.
//   - RV n: the history after n; 410 below the window. A future n is accepted and waits.
func (s *Server) watchStartLocked(w *watcher, o metav1.ListOptions) ([]watch.Event, error) {
	var n uint64
	if o.ResourceVersion != "" && o.ResourceVersion != "0" {
		var err error
		if n, err = parseRV(o.ResourceVersion); err != nil {
			return nil, err
		}
	}
	streaming := o.SendInitialEvents != nil && *o.SendInitialEvents
	unversioned := o.ResourceVersion == "" || o.ResourceVersion == "0"
	switch {
	case streaming:
		if n > s.rv {
			// NotOlderThan a future RV: the watch cache waits up to 3s, then fails like this.
			return nil, tooLargeRV(n, s.rv, 1)
		}
		w.threshold = n
		if o.ResourceVersion == "" {
			w.threshold = s.rv
		}
		events := s.stateEventsLocked(w.q)
		if o.AllowWatchBookmarks && !s.dropInitialEventsEnd {
			events = append(events, watch.Event{Type: watch.Bookmark, Object: s.bookmarkObject(s.rv, true)})
		}
		return events, nil
	case unversioned && o.SendInitialEvents == nil:
		return s.stateEventsLocked(w.q), nil
	case o.ResourceVersion == "":
		w.threshold = s.rv
		return nil, nil
	case unversioned:
		return nil, nil
	case n < s.floor:
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", n, s.floor))
	}
	w.threshold = n
	var events []watch.Event
	for _, ev := range s.history {
		if ev.rv <= n {
			continue
		}
		if we, ok := w.convert(ev); ok {
			events = append(events, we)
		}
	}
	return events, nil
}

func (s *Server) stateEventsLocked(q query) []watch.Event {
	keys := sortedKeys(s.objects)
	events := make([]watch.Event, 0, len(keys))
	for _, k := range keys {
		if obj := s.objects[k]; q.matches(s, obj) {
			events = append(events, watch.Event{Type: watch.Added, Object: obj.DeepCopyObject()})
		}
	}
	return events
}

// bookmarkObject is an empty object of the served kind carrying only a resourceVersion (and the
// end-of-initial-events annotation for a watch-list stream).
func (s *Server) bookmarkObject(rv uint64, initialEventsEnd bool) runtime.Object {
	obj := s.kind.newObj()
	if !s.kind.unstructured {
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	m := metaOf(obj)
	m.SetResourceVersion(formatRV(rv))
	if initialEventsEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return obj
}

func (s *Server) removeWatcher(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watchers, w)
}

// watcher is one open watch. Its queue is unbounded, so writers never block and nothing is
// dropped for a slow reader; its goroutine (run) owns delivery and ends on Stop, on the
// context, on the server's timeout, or when the server closes it.
type watcher struct {
	s         *Server
	q         query
	threshold uint64
	result    chan watch.Event
	stopCh    chan struct{}
	stopOnce  sync.Once
	ctxDone   <-chan struct{}

	// Owned by run after start.
	timer        clock.Timer
	deadline     time.Time
	bookmarks    bool
	nextBookmark time.Time

	mu       sync.Mutex
	queue    []watch.Event
	wake     chan struct{}
	ended    bool // close now, dropping what is queued
	draining bool // close once the queue is empty
	budget   int  // events left before closing; 0 = unlimited
	// final, when set, is sent in place of closing when the budget runs
	// out (InterruptNextWatches).
	final *watch.Event
}

func (s *Server) newWatcherLocked(ctx context.Context, q query, o metav1.ListOptions) *watcher {
	w := &watcher{
		s:         s,
		q:         q,
		result:    make(chan watch.Event),
		stopCh:    make(chan struct{}),
		ctxDone:   ctx.Done(),
		wake:      make(chan struct{}, 1),
		bookmarks: o.AllowWatchBookmarks,
	}
	now := s.clock.Now()
	switch {
	case o.TimeoutSeconds != nil && *o.TimeoutSeconds > 0:
		w.deadline = now.Add(time.Duration(*o.TimeoutSeconds) * time.Second)
	case s.opts.DefaultWatchTimeout > 0:
		w.deadline = now.Add(s.opts.DefaultWatchTimeout)
	}
	if w.bookmarks {
		w.nextBookmark = w.nextBookmarkTime(now)
	}
	// The timer exists before Watch returns, so a test that steps a fake clock right after
	// starting a watch always reaches it.
	if d, ok := w.nextWake(now); ok {
		w.timer = s.clock.NewTimer(d)
	}
	return w
}

// nextBookmarkTime follows the API server: about every BookmarkInterval, and once shortly before
// the watch times out.
func (w *watcher) nextBookmarkTime(now time.Time) time.Time {
	heartbeat := now.Add(w.s.opts.BookmarkInterval)
	if !w.deadline.IsZero() {
		if pre := w.deadline.Add(-preTimeoutBookmark); pre.After(now) && pre.Before(heartbeat) {
			return pre
		}
	}
	return heartbeat
}

func (w *watcher) nextWake(now time.Time) (time.Duration, bool) {
	var at time.Time
	if w.bookmarks {
		at = w.nextBookmark
	}
	if !w.deadline.IsZero() && (at.IsZero() || w.deadline.Before(at)) {
		at = w.deadline
	}
	if at.IsZero() {
		return 0, false
	}
	return at.Sub(now), true
}

// ResultChan returns the event channel; it is closed when the watch ends.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch; the result channel is closed soon after. Safe to call more than once.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stopCh) })
	w.s.removeWatcher(w)
}

func (w *watcher) run() {
	defer w.finish()
	var timerC <-chan time.Time
	if w.timer != nil {
		timerC = w.timer.C()
	}
	for {
		gate := w.s.heldGate()
		ev, ready, quit := w.head(gate == nil)
		if quit {
			return
		}
		var out chan<- watch.Event
		if ready {
			out = w.result
		}
		select {
		case out <- ev:
			if w.delivered() {
				return
			}
		case <-w.wake:
		case <-gate:
		case <-w.stopCh:
			return
		case <-w.ctxDone:
			return
		case <-timerC:
			if w.onTimer() {
				return
			}
		}
	}
}

func (w *watcher) finish() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.s.removeWatcher(w)
	close(w.result)
}

// head returns the next event to deliver, if delivery is open, and whether the watch is over.
func (w *watcher) head(open bool) (watch.Event, bool, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.ended:
		return watch.Event{}, false, true
	case len(w.queue) == 0:
		return watch.Event{}, false, w.draining
	case !open:
		return watch.Event{}, false, false
	}
	return w.queue[0], true, false
}

// delivered drops the delivered head and reports whether the watch's event budget ran out; a
// watch with a final event sends it instead and closes after it.
func (w *watcher) delivered() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue[0] = watch.Event{}
	w.queue = w.queue[1:]
	if w.budget > 0 {
		w.budget--
		if w.budget == 0 && w.final != nil {
			w.finalLocked()
			return false
		}
		return w.budget == 0
	}
	return false
}

// finalLocked replaces what is queued with the final event and drains: nothing more is queued.
// Called with w.mu held.
func (w *watcher) finalLocked() {
	clear(w.queue)
	w.queue = append(w.queue[:0], *w.final)
	w.final, w.draining = nil, true
}

// interruptAfter ends the watch after n more deliveries (now when n is 0): with final when set,
// else closed. Called with the server's mu held, before the watch's goroutine runs.
func (w *watcher) interruptAfter(n int, final *watch.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.final = final
	switch {
	case n > 0:
		w.budget = n
	case final != nil:
		w.finalLocked()
	default:
		w.ended = true
	}
}

// onTimer handles the deadline and periodic bookmarks; it reports whether the watch is over.
func (w *watcher) onTimer() bool {
	now := w.s.clock.Now()
	if !w.deadline.IsZero() && !now.Before(w.deadline) {
		return true
	}
	w.s.tick(w, now)
	return false
}

// tick re-arms the watch's timer and sends a due bookmark. Both happen under the server lock, so
// a test that sees the timer re-armed on its fake clock knows the bookmark decision is made, and
// a test that received the bookmark can step the clock again.
func (s *Server) tick(w *watcher, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	due := w.bookmarks && !now.Before(w.nextBookmark)
	if due {
		w.nextBookmark = w.nextBookmarkTime(now)
	}
	if d, ok := w.nextWake(now); ok {
		w.timer.Reset(d)
	}
	if _, open := s.watchers[w]; due && open && s.rv > w.threshold {
		w.push(watch.Event{Type: watch.Bookmark, Object: s.bookmarkObject(s.rv, false)})
	}
}

// offer converts a stored change for this watch and queues it. Called with the server locked.
func (w *watcher) offer(ev event) {
	if ev.rv <= w.threshold {
		return
	}
	if we, ok := w.convert(ev); ok {
		w.push(we)
	}
}

// convert maps a change to what this watch sees, as the API server's cacheWatcher does: an
// object entering the selector is ADDED, one leaving it is DELETED (its previous state with the
// change's resourceVersion), one staying is MODIFIED.
func (w *watcher) convert(ev event) (watch.Event, bool) {
	cur := ev.typ != watch.Deleted && w.q.matches(w.s, ev.obj)
	old := ev.prev != nil && w.q.matches(w.s, ev.prev)
	switch {
	case cur && !old:
		return watch.Event{Type: watch.Added, Object: ev.obj.DeepCopyObject()}, true
	case cur && old:
		return watch.Event{Type: watch.Modified, Object: ev.obj.DeepCopyObject()}, true
	case old:
		obj := ev.prev.DeepCopyObject()
		metaOf(obj).SetResourceVersion(formatRV(ev.rv))
		return watch.Event{Type: watch.Deleted, Object: obj}, true
	}
	return watch.Event{}, false
}

func (w *watcher) push(ev watch.Event) {
	w.mu.Lock()
	if w.ended || w.draining {
		w.mu.Unlock()
		return
	}
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	w.signal()
}

// fail queues a final ERROR event; the watch closes after delivering it.
func (w *watcher) fail(ev watch.Event) {
	w.push(ev)
	w.mu.Lock()
	w.draining = true
	w.mu.Unlock()
	w.signal()
}

func (w *watcher) terminate() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
	w.signal()
}

func (w *watcher) closeAfter(n int) {
	if n <= 0 {
		w.terminate()
		return
	}
	w.mu.Lock()
	w.budget = n
	w.mu.Unlock()
}

func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
