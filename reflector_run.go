package cache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openinformer/cache/internal/objmeta"
	"github.com/openinformer/cache/internal/reflectorfsm"
)

// reflectorRun is the I/O side of one ListAndWatch: it performs the
// machine's actions and owns what they leave behind between steps (the
// open watch, the listed or streamed objects, the resync timer).
type reflectorRun struct {
	ctx    context.Context
	r      *Reflector
	logger klog.Logger

	w      watch.Interface
	listed runtime.Object
	// held, with listed, is a compact informer's list as it is held.
	held     *listHolder
	streamed *watchListBuffer
	// supplied is the list a warm start supplied, already transformed.
	supplied []any

	resyncTimer clock.Timer
}

func newReflectorRun(ctx context.Context, r *Reflector) *reflectorRun {
	return &reflectorRun{ctx: ctx, r: r, logger: klog.FromContext(ctx)}
}

// warmStart runs the reflector's warm start, once, and tells begin its
// outcome: a supplied list, or a fresh sync from a consistent read. It
// returns false when ctx ended meanwhile.
func (run *reflectorRun) warmStart(begin *reflectorfsm.Begin) bool {
	r := run.r
	r.mu.Lock()
	ws := r.warmStart
	r.warmStart = nil
	r.mu.Unlock()
	if ws == nil {
		return true
	}
	res := ws(run.ctx)
	if run.ctx.Err() != nil {
		return false
	}
	if res.synced {
		run.supplied = res.items
		begin.Supplied, begin.SuppliedResourceVersion = true, res.rv
	} else {
		begin.Consistent = true
	}
	return true
}

func (run *reflectorRun) close() {
	run.stopWatch()
	if run.resyncTimer != nil {
		run.resyncTimer.Stop()
	}
}

func (run *reflectorRun) stopWatch() {
	if run.w != nil {
		run.w.Stop()
		run.w = nil
	}
}

func (run *reflectorRun) note(act reflectorfsm.Action) {
	r := run.r
	if act.Kind == reflectorfsm.List {
		run.logger.V(4).Info("Data couldn't be fetched in watchlist mode. Falling back to regular list. This is expected if watchlist is not supported or disabled in kube-apiserver.", "err", act.Note)
		return
	}
	run.logger.Info("Warning: watch ended with error", "reflector", r.name, "type", r.typeDescription, "err", act.Note)
}

// backoff waits one step of the shared backoff. It returns false if ctx
// ended the wait. During the watch phase the resync timer keeps running.
func (run *reflectorRun) backoff() bool {
	t := run.r.clock.NewTimer(run.r.delay())
	defer t.Stop()
	for {
		select {
		case <-run.ctx.Done():
			return false
		case <-t.C():
			return true
		case <-run.resyncC():
			if err := run.resync(); err != nil {
				run.logger.Info("Warning: watch ended with error", "reflector", run.r.name, "type", run.r.typeDescription, "err", err)
				return false
			}
		}
	}
}

// list performs one LIST, paged as the machine asked, aside, so that a
// cancelled ctx returns at once even if the server does not. A compact
// informer's list is held as it comes (reflector_list_held.go).
func (run *reflectorRun) list(act reflectorfsm.Action) reflectorfsm.Input {
	type result struct {
		list      runtime.Object
		paginated bool
		err       error
	}
	holder := newListHolder(run.r.queue, run.r.prehold)
	res, err := aside(run, false, func() result {
		list, paginated, err := run.listPages(holder, act.PageSize, act.Options)
		if err == nil {
			if gvk, table := isTableList(list); table {
				err = fmt.Errorf("unsupported list gvk: %v, type: %v", gvk, run.r.typeDescription)
			}
		}
		return result{list, paginated, err}
	}, nil)
	switch {
	case err != nil:
		return nil
	case res.err != nil:
		return reflectorfsm.ListDone{Err: res.err}
	}
	listMeta, err := meta.ListAccessor(res.list)
	if err != nil {
		return reflectorfsm.ListDone{Err: fmt.Errorf("unable to understand list result %#v: %v", res.list, err)}
	}
	run.listed, run.held = res.list, holder
	return reflectorfsm.ListDone{ResourceVersion: listMeta.GetResourceVersion(), Paginated: res.paginated}
}

// aside runs call on its own goroutine and waits for its result, so that
// waiting on a slow server stays interruptible: ctx's end returns
// errReflectorStopped. With serveResync the resync timer is served
// meanwhile (nothing writes to the store while call runs, so a resync
// cannot overlap a write) and a failed resync is returned. A result that
// arrives after its waiter gave up goes to discard; a panic in call is
// re-raised on the waiting goroutine.
func aside[T any](run *reflectorRun, serveResync bool, call func() T, discard func(T)) (T, error) {
	c := &asideCall[T]{done: make(chan asideOutcome[T], 1)}
	go c.run(call, discard)
	var resyncC <-chan time.Time
	for {
		if serveResync {
			resyncC = run.resyncC()
		}
		select {
		case <-run.ctx.Done():
			return c.abandon(discard, errReflectorStopped)
		case out := <-c.done:
			if out.panicked {
				panic(out.panic)
			}
			return out.val, nil
		case <-resyncC:
			if err := run.resync(); err != nil {
				return c.abandon(discard, err)
			}
		}
	}
}

// asideCall is one call made by aside; abandoned tells its goroutine that
// nobody will take the result any more.
type asideCall[T any] struct {
	mu        sync.Mutex
	abandoned bool
	done      chan asideOutcome[T]
}

type asideOutcome[T any] struct {
	val      T
	panic    interface{}
	panicked bool
}

func (c *asideCall[T]) run(call func() T, discard func(T)) {
	var out asideOutcome[T]
	defer func() {
		if p := recover(); p != nil {
			out = asideOutcome[T]{panic: p, panicked: true}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.abandoned {
			c.done <- out
		} else if !out.panicked && discard != nil {
			discard(out.val)
		}
	}()
	out.val = call()
}

// abandon gives up waiting; a result already delivered is discarded here,
// a later one by the call's goroutine.
func (c *asideCall[T]) abandon(discard func(T), err error) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.abandoned = true
	select {
	case out := <-c.done:
		if !out.panicked && discard != nil {
			discard(out.val)
		}
	default:
	}
	var zero T
	return zero, err
}

func (run *reflectorRun) replace(act reflectorfsm.Action) reflectorfsm.Input {
	in := run.replaceWith(act.ResourceVersion)
	if in.Err == nil {
		run.logger.V(2).Info("Caches populated", "type", run.r.typeDescription, "reflector", run.r.name)
	}
	return in
}

// replaceWith replaces the store's content with what the last LIST or
// watch-list brought.
func (run *reflectorRun) replaceWith(rv string) reflectorfsm.Replaced {
	if run.streamed != nil {
		return run.replaceStreamed(rv)
	}
	if run.supplied != nil {
		return run.replaceSupplied(rv)
	}
	list, holder := run.listed, run.held
	run.listed, run.held = nil, nil
	if holder != nil {
		return replaceHeld(holder, list, rv)
	}
	items, err := extractListItems(list)
	if err != nil {
		return reflectorfsm.Replaced{Err: fmt.Errorf("unable to understand list result %#v (%v)", list, err)}
	}
	if err := run.r.store.Replace(items, rv); err != nil {
		return reflectorfsm.Replaced{Err: fmt.Errorf("unable to sync list result: %v", err)}
	}
	return reflectorfsm.Replaced{}
}

// replaceSupplied hands a warm start's list to the store in one Replace;
// a queue of this package takes it as already transformed.
func (run *reflectorRun) replaceSupplied(rv string) reflectorfsm.Replaced {
	items := run.supplied
	run.supplied = nil
	var err error
	if q := run.r.queue; q != nil {
		err = q.replace(items, rv)
	} else {
		err = run.r.store.Replace(items, rv)
	}
	if err != nil {
		return reflectorfsm.Replaced{Err: fmt.Errorf("unable to sync the snapshot's list: %v", err)}
	}
	return reflectorfsm.Replaced{}
}

// extractListItems returns the items of a list as separate objects, each
// copied out of the list's backing array so that keeping one item does not
// keep the whole list alive.
func extractListItems(list runtime.Object) ([]interface{}, error) {
	items := make([]interface{}, 0, meta.LenList(list))
	err := meta.EachListItemWithAlloc(list, func(obj runtime.Object) error {
		items = append(items, obj)
		return nil
	})
	return items, err
}

// watch applies watch events to the store until the watch ends.
func (run *reflectorRun) watch(act reflectorfsm.Action) reflectorfsm.Input {
	r := run.r
	run.armResync()
	start := r.clock.Now()
	var err error
	if !act.Reuse {
		var startErr error
		if startErr, err = run.openWatch(act.Options); startErr != nil {
			return reflectorfsm.WatchStartFailed{Err: startErr}
		}
	}
	if err == nil {
		_, err = run.consume(start, storeEventSink{r}, false, 0)
		run.stopWatch()
	}
	if err == errReflectorStopped {
		return nil
	}
	run.logWatchEnd(err)
	return reflectorfsm.WatchEnded{Err: err, At: r.clock.Now()}
}

// openWatch opens run.w. The server may take long to answer (an
// overloaded API server, a proxy holding headers), so with a resync timer
// the request runs aside and resync keeps its period meanwhile, as
// client-go's does; without one there is nothing to serve and the request
// is made in place. startErr is the request's failure; err is a stop or a
// failed resync while waiting.
func (run *reflectorRun) openWatch(opts metav1.ListOptions) (startErr, err error) {
	r := run.r
	var opened openedWatch
	if run.resyncTimer == nil {
		opened.w, opened.err = openedOrError(r.listerWatcher.WatchWithContext(run.ctx, opts))
	} else {
		opened, err = aside(run, true, func() openedWatch {
			w, err := openedOrError(r.listerWatcher.WatchWithContext(run.ctx, opts))
			return openedWatch{w, err}
		}, openedWatch.stop)
	}
	switch {
	case err != nil:
		return nil, err
	case opened.err != nil:
		if c := reflectorfsm.Classify(opened.err); c == reflectorfsm.ClassTooManyRequests || c == reflectorfsm.ClassConnectionRefused {
			run.logger.V(4).Info("Watch failed - backing off", "reflector", r.name, "type", r.typeDescription, "err", opened.err)
		}
		return opened.err, nil
	}
	run.w = opened.w
	return nil, nil
}

// errNilWatch is the error of a Watch that returned neither a watch nor an
// error, where client-go dereferences the nil watch and crashes.
var errNilWatch = errors.New("the ListerWatcher's Watch returned neither a watch nor an error")

// openedOrError turns Watch's (nil, nil) into errNilWatch, a failed watch
// like any other: ListAndWatch returns it and Run backs off.
func openedOrError(w watch.Interface, err error) (watch.Interface, error) {
	if w == nil && err == nil {
		return nil, errNilWatch
	}
	return w, err
}

// openedWatch is the answer to a watch request.
type openedWatch struct {
	w   watch.Interface
	err error
}

// stop closes a watch that was opened after its reflector stopped
// waiting for it.
func (o openedWatch) stop() {
	if o.w != nil {
		o.w.Stop()
	}
}

// logWatchEnd logs the routine ways a watch ends at the verbosity
// client-go uses; the machine's Note covers the others.
func (run *reflectorRun) logWatchEnd(err error) {
	r := run.r
	switch reflectorfsm.Classify(err) {
	case reflectorfsm.ClassExpired:
		run.logger.V(4).Info("Watch closed", "reflector", r.name, "type", r.typeDescription, "err", err)
	case reflectorfsm.ClassTooManyRequests:
		run.logger.V(2).Info("Watch returned 429 - backing off", "reflector", r.name, "type", r.typeDescription)
	case reflectorfsm.ClassInternal:
		run.logger.V(2).Info("Watch ended with an internal error", "reflector", r.name, "type", r.typeDescription, "err", err)
	}
}

// armResync starts the resync timer the first time the run reaches its
// watch phase.
func (run *reflectorRun) armResync() {
	if run.resyncTimer == nil && run.r.resyncPeriod != 0 {
		run.resyncTimer = run.r.clock.NewTimer(run.r.resyncPeriod)
	}
}

func (run *reflectorRun) resyncC() <-chan time.Time {
	if run.resyncTimer == nil {
		return nil
	}
	return run.resyncTimer.C()
}

// resync calls the store's Resync if ShouldResync agrees, and re-arms the
// timer unless Resync failed.
func (run *reflectorRun) resync() error {
	r := run.r
	if r.ShouldResync == nil || r.ShouldResync() {
		run.logger.V(4).Info("Forcing resync", "reflector", r.name)
		if err := r.store.Resync(); err != nil {
			run.resyncTimer = nil
			return err
		}
	}
	run.resyncTimer.Stop()
	run.resyncTimer = r.clock.NewTimer(r.resyncPeriod)
	return nil
}

// eventSink is where consume applies the events it accepts.
type eventSink interface {
	add(obj runtime.Object) error
	update(obj runtime.Object) error
	delete(obj runtime.Object) error
	bookmark(rv string) error
	// observe is told each applied event's version and whether the
	// stream is known to be past its initial synthetic Added events.
	observe(rv string, pastInitialAdds bool)
}

var errReflectorStopped = errors.New("reflector stopped")

// errQuietStream ends a watch-list stream that went its patience without
// an event.
var errQuietStream = errors.New("watch-list stream quiet without its end bookmark")

// consume reads events from run.w into sink until the channel closes, an
// error arrives, ctx ends (errReflectorStopped) or, with untilSynced, the
// end-of-initial-events bookmark is applied (synced is then true) or no
// event came for patience (errQuietStream; zero waits forever).
func (run *reflectorRun) consume(start time.Time, sink eventSink, untilSynced bool, patience time.Duration) (synced bool, err error) {
	r := run.r
	warn := newInitialEventsWarning(run.logger, r.name, r.clock, start, untilSynced, patience)
	defer warn.stop()
	pastInitialAdds := false
	count := 0
	for {
		select {
		case <-run.ctx.Done():
			return false, errReflectorStopped
		case <-run.resyncC():
			if err := run.resync(); err != nil {
				return false, err
			}
		case <-warn.c():
			if warn.check() {
				return false, errQuietStream
			}
		case event, ok := <-run.w.ResultChan():
			if !ok {
				if reflectorfsm.IsVeryShortWatch(r.clock.Since(start), count) {
					return false, &VeryShortWatchError{Name: r.name}
				}
				run.logger.V(4).Info("Watch close", "reflector", r.name, "type", r.typeDescription, "totalItems", count)
				return false, nil
			}
			if event.Type == watch.Error {
				return false, apierrors.FromObject(event.Object)
			}
			applied, end := run.apply(event, sink, &pastInitialAdds)
			if !applied {
				continue
			}
			count++
			if untilSynced && end {
				run.logger.V(4).Info("Exiting watch because received the bookmark that marks the end of initial events stream", "reflector", r.name, "totalItems", count, "duration", r.clock.Since(start))
				return true, nil
			}
			if untilSynced {
				warn.observe(r.clock.Now())
			}
		}
	}
}

// apply checks one event and applies it to sink. applied is false for
// events that are dropped; end is true for the end-of-initial-events
// bookmark.
func (run *reflectorRun) apply(event watch.Event, sink eventSink, pastInitialAdds *bool) (applied, end bool) {
	r := run.r
	ctx := run.ctx
	if !r.acceptsEventObject(ctx, event.Object) {
		return false, false
	}
	m, err := objmeta.Accessor(event.Object)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Unable to understand watch event", "reflector", r.name, "event", event)
		return false, false
	}
	rv := m.GetResourceVersion()
	switch event.Type {
	case watch.Added:
		if err := sink.add(event.Object); err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Unable to add watch event object to store", "reflector", r.name, "object", event.Object)
		}
	case watch.Modified:
		*pastInitialAdds = true
		if err := sink.update(event.Object); err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Unable to update watch event object to store", "reflector", r.name, "object", event.Object)
		}
	case watch.Deleted:
		*pastInitialAdds = true
		if err := sink.delete(event.Object); err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Unable to delete watch event object from store", "reflector", r.name, "object", event.Object)
		}
	case watch.Bookmark:
		*pastInitialAdds = true
		end = m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
		if err := sink.bookmark(rv); err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Unable to send bookmark event to store", "reflector", r.name, "object", event.Object)
		}
	default:
		utilruntime.HandleErrorWithContext(ctx, nil, "Unknown watch event", "reflector", r.name, "event", event)
	}
	sink.observe(rv, *pastInitialAdds)
	return true, end
}

// acceptsEventObject reports whether an event's object is of the expected
// type and GVK and not a Table, logging the ones it rejects.
func (r *Reflector) acceptsEventObject(ctx context.Context, obj runtime.Object) bool {
	if r.expectedType != nil {
		if actual := reflect.TypeOf(obj); actual != r.expectedType {
			utilruntime.HandleErrorWithContext(ctx, nil, "Unexpected watch event object type", "reflector", r.name, "expectedType", r.expectedType, "actualType", actual)
			return false
		}
	}
	if r.expectedGVK != nil {
		if actual := obj.GetObjectKind().GroupVersionKind(); actual != *r.expectedGVK {
			utilruntime.HandleErrorWithContext(ctx, nil, "Unexpected watch event object gvk", "reflector", r.name, "expectedGVK", *r.expectedGVK, "actualGVK", actual)
			return false
		}
	}
	if isTableObject(obj) {
		utilruntime.HandleErrorWithContext(ctx, nil, "Unsupported watch event object gvk", "reflector", r.name, "actualGVK", obj.GetObjectKind().GroupVersionKind())
		return false
	}
	return true
}

// storeEventSink applies watch events to the reflector's store.
type storeEventSink struct{ r *Reflector }

func (s storeEventSink) add(obj runtime.Object) error    { return s.r.store.Add(obj) }
func (s storeEventSink) update(obj runtime.Object) error { return s.r.store.Update(obj) }
func (s storeEventSink) delete(obj runtime.Object) error { return s.r.store.Delete(obj) }

func (s storeEventSink) bookmark(rv string) error {
	if b, ok := s.r.store.(ReflectorBookmarkStore); ok {
		return b.Bookmark(rv)
	}
	return nil
}

func (s storeEventSink) observe(rv string, pastInitialAdds bool) {
	s.r.observe(rv, pastInitialAdds)
}

// tableGVKs are the server-side Table kinds, which a reflector cannot
// store.
var tableGVKs = map[schema.GroupVersionKind]bool{
	metav1beta1.SchemeGroupVersion.WithKind("Table"): true,
	metav1.SchemeGroupVersion.WithKind("Table"):      true,
}

func isTableObject(obj runtime.Object) bool {
	u, ok := obj.(*unstructured.Unstructured)
	return ok && u.GetKind() == "Table" && tableGVKs[u.GroupVersionKind()]
}

func isTableList(obj runtime.Object) (schema.GroupVersionKind, bool) {
	u, ok := obj.(*unstructured.UnstructuredList)
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	gvk := u.GetObjectKind().GroupVersionKind()
	return gvk, tableGVKs[gvk]
}
