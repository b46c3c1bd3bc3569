package cache

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openinformer/cache/internal/objmeta"
)

// reflectorTestClock is a fake clock that reports every timer a reflector
// starts, so a test can wait for the reflector to block on time and then
// move time on, without sleeping.
type reflectorTestClock struct {
	*clocktesting.FakeClock
	timers chan time.Duration
}

func newReflectorTestClock() *reflectorTestClock {
	return &reflectorTestClock{
		FakeClock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		timers:    make(chan time.Duration, 10000),
	}
}

func (c *reflectorTestClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.timers <- d
	return t
}

func (c *reflectorTestClock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.timers <- d
	return ch
}

// autoStep moves time forward by every timer's duration as soon as the
// timer is started, until ctx ends; it returns the durations it saw.
func (c *reflectorTestClock) autoStep(ctx context.Context) func() []time.Duration {
	var seen []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case d := <-c.timers:
				seen = append(seen, d)
				c.Step(d)
			}
		}
	}()
	return func() []time.Duration { <-done; return seen }
}

// reflectorCall is one request a scripted ListerWatcher received.
type reflectorCall struct {
	Watch   bool
	Options metav1.ListOptions
}

func (c reflectorCall) String() string {
	kind := "LIST"
	if c.Watch {
		kind = "WATCH"
	}
	o := c.Options
	s := fmt.Sprintf("%s rv=%q limit=%d continue=%q bookmarks=%v match=%q", kind, o.ResourceVersion, o.Limit, o.Continue, o.AllowWatchBookmarks, o.ResourceVersionMatch)
	if o.SendInitialEvents != nil {
		s += fmt.Sprintf(" sendInitialEvents=%v", *o.SendInitialEvents)
	}
	if o.TimeoutSeconds != nil {
		s += " timeout"
	}
	return s
}

// reflectorStep is the scripted answer to one request.
type reflectorStep struct {
	list   runtime.Object
	err    error
	events []watch.Event
	// hold keeps the watch open after its events instead of closing it.
	hold bool
	// advance moves the clock on while the request is served, so a watch
	// that then closes has lasted that long.
	advance time.Duration
	// isWatch must match the request kind.
	isWatch bool
	// cancelAfter hands the events over one at a time and cancels the
	// test's context as soon as the reflector has taken the last one.
	cancelAfter bool
}

func listStep(obj runtime.Object, err error) reflectorStep {
	return reflectorStep{list: obj, err: err}
}

func watchStep(err error, events ...watch.Event) reflectorStep {
	return reflectorStep{isWatch: true, err: err, events: events, advance: 2 * time.Second}
}

// reflectorScriptLW is a ListerWatcher that answers requests from a
// script, records them, and cancels the test's context once the script is
// used up.
type reflectorScriptLW struct {
	t      testing.TB
	clk    *reflectorTestClock
	cancel context.CancelFunc

	mu       sync.Mutex
	steps    []reflectorStep
	calls    []reflectorCall
	watchers []*reflectorScriptWatcher
	noWL     bool
	// stopping makes a stoppingContext report its end early.
	stopping atomic.Bool
}

// stoppingContext reports itself cancelled (Err) from the moment its
// ListerWatcher starts handing over the last event of a cancelAfter step,
// while Done closes only once that event was taken: a reflector that
// checks Err after reading the event sees the stop that, in production,
// can land at that very moment.
type stoppingContext struct {
	context.Context
	lw *reflectorScriptLW
}

func (c stoppingContext) Err() error {
	if c.lw.stopping.Load() {
		return context.Canceled
	}
	return c.Context.Err()
}

func newReflectorScriptLW(t testing.TB, clk *reflectorTestClock, cancel context.CancelFunc, steps ...reflectorStep) *reflectorScriptLW {
	return &reflectorScriptLW{t: t, clk: clk, cancel: cancel, steps: steps}
}

func (lw *reflectorScriptLW) next(call reflectorCall) (reflectorStep, bool) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.calls = append(lw.calls, call)
	if len(lw.steps) == 0 {
		lw.cancel()
		return reflectorStep{}, false
	}
	s := lw.steps[0]
	lw.steps = lw.steps[1:]
	if s.isWatch != call.Watch {
		lw.t.Errorf("script expected watch=%v, got %v", s.isWatch, call)
		lw.cancel()
		return reflectorStep{}, false
	}
	return s, true
}

func (lw *reflectorScriptLW) List(options metav1.ListOptions) (runtime.Object, error) {
	s, ok := lw.next(reflectorCall{Options: options})
	if !ok {
		return nil, errors.New("script exhausted")
	}
	if s.advance > 0 {
		lw.clk.Step(s.advance)
	}
	if s.err != nil {
		return nil, s.err
	}
	return s.list.DeepCopyObject(), nil
}

func (lw *reflectorScriptLW) Watch(options metav1.ListOptions) (watch.Interface, error) {
	s, ok := lw.next(reflectorCall{Watch: true, Options: options})
	if !ok {
		return lw.newWatcher(nil, true), nil
	}
	if s.advance > 0 {
		lw.clk.Step(s.advance)
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.cancelAfter {
		return lw.newHandingWatcher(s.events), nil
	}
	return lw.newWatcher(s.events, s.hold), nil
}

// newHandingWatcher serves events on an unbuffered channel, so that the
// test's context is cancelled right after the reflector has read the last
// one and before it can read anything else.
func (lw *reflectorScriptLW) newHandingWatcher(events []watch.Event) *reflectorScriptWatcher {
	w := &reflectorScriptWatcher{ch: make(chan watch.Event), stop: make(chan struct{})}
	lw.mu.Lock()
	lw.watchers = append(lw.watchers, w)
	lw.mu.Unlock()
	go func() {
		for i, e := range events {
			if i == len(events)-1 {
				lw.stopping.Store(true)
			}
			select {
			case w.ch <- watch.Event{Type: e.Type, Object: e.Object.DeepCopyObject()}:
			case <-w.stop:
				return
			}
		}
		lw.cancel()
	}()
	return w
}

// IsWatchListSemanticsUnSupported lets a script opt out of watch-list.
func (lw *reflectorScriptLW) IsWatchListSemanticsUnSupported() bool { return lw.noWL }

func (lw *reflectorScriptLW) newWatcher(events []watch.Event, hold bool) *reflectorScriptWatcher {
	w := &reflectorScriptWatcher{ch: make(chan watch.Event, len(events))}
	for _, e := range events {
		e.Object = e.Object.DeepCopyObject()
		w.ch <- e
	}
	if !hold {
		close(w.ch)
	}
	lw.mu.Lock()
	lw.watchers = append(lw.watchers, w)
	lw.mu.Unlock()
	return w
}

func (lw *reflectorScriptLW) recorded() []reflectorCall {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return append([]reflectorCall(nil), lw.calls...)
}

// unstopped counts watchers the reflector never stopped.
func (lw *reflectorScriptLW) unstopped() int {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	n := 0
	for _, w := range lw.watchers {
		w.mu.Lock()
		if !w.stopped {
			n++
		}
		w.mu.Unlock()
	}
	return n
}

type reflectorScriptWatcher struct {
	ch      chan watch.Event
	stop    chan struct{} // closed by Stop when not nil
	mu      sync.Mutex
	stopped bool
}

func (w *reflectorScriptWatcher) ResultChan() <-chan watch.Event { return w.ch }

func (w *reflectorScriptWatcher) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil && !w.stopped {
		close(w.stop)
	}
	w.stopped = true
}

// reflectorTestStore is a map-backed ReflectorStore that records what was
// done to it.
type reflectorTestStore struct {
	mu         sync.Mutex
	items      map[string]interface{}
	ops        []string
	bookmarks  []string
	rvUpdates  []string
	resyncErr  error
	replaceErr error
}

func newReflectorTestStore() *reflectorTestStore {
	return &reflectorTestStore{items: map[string]interface{}{}}
}

func (s *reflectorTestStore) record(op string, obj interface{}) string {
	key, _ := DeletionHandlingMetaNamespaceKeyFunc(obj)
	s.ops = append(s.ops, op+" "+key)
	return key
}

func (s *reflectorTestStore) Add(obj interface{}) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[s.record("add", obj)] = obj
	return nil
}

func (s *reflectorTestStore) Update(obj interface{}) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[s.record("update", obj)] = obj
	return nil
}

func (s *reflectorTestStore) Delete(obj interface{}) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, s.record("delete", obj))
	return nil
}

func (s *reflectorTestStore) Replace(list []interface{}, rv string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, fmt.Sprintf("replace %d @%s", len(list), rv))
	if s.replaceErr != nil {
		return s.replaceErr
	}
	s.items = map[string]interface{}{}
	for _, obj := range list {
		key, _ := DeletionHandlingMetaNamespaceKeyFunc(obj)
		s.items[key] = obj
	}
	return nil
}

func (s *reflectorTestStore) Resync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, "resync")
	return s.resyncErr
}

// contents returns "key@rv" for every stored object, sorted.
func (s *reflectorTestStore) contents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.items))
	for k, obj := range s.items {
		m, err := objmeta.Accessor(obj)
		if err != nil {
			out = append(out, k+"@?")
			continue
		}
		out = append(out, k+"@"+m.GetResourceVersion())
	}
	sort.Strings(out)
	return out
}

func (s *reflectorTestStore) operations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ops...)
}

// reflectorBookmarkTestStore also takes bookmarks and resource versions.
type reflectorBookmarkTestStore struct{ *reflectorTestStore }

func (s reflectorBookmarkTestStore) Bookmark(rv string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bookmarks = append(s.bookmarks, rv)
	return nil
}

func (s reflectorBookmarkTestStore) UpdateResourceVersion(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rvUpdates = append(s.rvUpdates, rv)
}

// Builders for lists, events and API errors.

func reflectorPodList(rv, cont string, pods ...*v1.Pod) *v1.PodList {
	l := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
	for _, p := range pods {
		l.Items = append(l.Items, *p)
	}
	return l
}

func reflectorEvent(t watch.EventType, name, rv string) watch.Event {
	return watch.Event{Type: t, Object: newTestPod("ns", name, rv)}
}

func reflectorBookmark(rv string, initialEnd bool) watch.Event {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
	if initialEnd {
		p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return watch.Event{Type: watch.Bookmark, Object: p}
}

func reflectorErrorEvent(err error) watch.Event {
	var status interface{ Status() metav1.Status }
	if !errors.As(err, &status) {
		panic("not a status error")
	}
	st := status.Status()
	return watch.Event{Type: watch.Error, Object: &st}
}
