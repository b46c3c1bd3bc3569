// Package catchup performs a warm restart's requests for restartfsm: it is
// the machine's I/O edge. Run loads the snapshot through the caller, probes
// the server, resumes the watch, feeds every outcome to the machine and
// applies catch-up events to the caller's staged cache, until the machine
// says synced or fallback. It knows nothing of how the cache is stored.
//
// On success the catch-up watch is closed, not handed over: the reflector
// then watches from the synced version as after any LIST, with its own
// timeout and its own "very short watch" clock, which a watch opened
// seconds earlier with a 3 s timeout would trip.
package catchup

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openinformer/cache/internal/restartfsm"
	"github.com/openinformer/cache/internal/snapshot"
)

// DefaultBackoff is the pause before a request the machine asks to retry.
const DefaultBackoff = time.Second

// Config is what Run needs.
type Config struct {
	// ListerWatcher is the informer's.
	ListerWatcher clientcache.ListerWatcherWithContext
	// Load reads the snapshot, and the journal that follows it, into the
	// staged cache and returns the version reached; an error whose
	// snapshot.ReasonOf is MissingReason means there is none. Records must
	// be kept only once the whole snapshot verified.
	Load func() (resourceVersion string, err error)
	// Apply applies a catch-up event (ADDED, MODIFIED or DELETED) to the
	// staged cache; handlers are not told.
	Apply func(watch.Event)
	// CheckProbe, when set, is given the probe's list and the version Load
	// returned: an error refuses the snapshot (restartfsm.Unusable), for a
	// listed object the snapshot should hold as listed and does not.
	CheckProbe func(list runtime.Object, loaded string) error
	// Machine configures the decisions.
	Machine restartfsm.Config
	// Clock times backoffs and the catch-up deadline; nil is the real one.
	Clock clock.Clock
	// Backoff is the pause before a retried request; 0 is DefaultBackoff.
	Backoff time.Duration
}

// Result is how a restart ended.
type Result struct {
	// Synced reports that the staged cache caught up at ResourceVersion:
	// hand it over as a LIST's result at that version, and watch from it.
	Synced          bool
	ResourceVersion string
	// Reason and Err explain a fallback, already logged; Err alone is the
	// context's error when Run was stopped.
	Reason restartfsm.Reason
	Err    error
}

// Run performs a restart to its end. On a fallback it logs the reason once
// and returns with the staged cache to be dropped.
func Run(ctx context.Context, cfg Config) Result {
	r := &run{cfg: cfg, ctx: ctx, m: restartfsm.New(cfg.Machine)}
	if r.cfg.Clock == nil {
		r.cfg.Clock = clock.RealClock{}
	}
	if r.cfg.Backoff <= 0 {
		r.cfg.Backoff = DefaultBackoff
	}
	res := r.loop()
	if !res.Synced && res.Reason != 0 {
		logFallback(klog.FromContext(ctx), res)
	}
	return res
}

// logFallback is the one line a fallback logs: at V(2) for a first start,
// which is not worth a user's attention, at Info for the others.
func logFallback(logger klog.Logger, res Result) {
	if res.Reason == restartfsm.NoSnapshot {
		logger = logger.V(2)
	}
	logger.Info("Warm restart not used, syncing from the server", "reason", res.Reason.String(), "err", res.Err)
}

// run is one Run's state.
type run struct {
	cfg      Config
	ctx      context.Context
	m        *restartfsm.Machine
	w        watch.Interface
	event    watch.Event
	deadline <-chan time.Time
	// loaded is the version Load returned.
	loaded string
}

func (r *run) loop() Result {
	a := r.m.Step(restartfsm.Begin{})
	for {
		if a.Backoff && !r.sleep(r.cfg.Backoff) {
			return r.stopped()
		}
		if a.ArmDeadline {
			r.deadline = r.cfg.Clock.After(r.cfg.Machine.CatchUpTimeout)
		}
		var in restartfsm.Input
		switch a.Kind {
		case restartfsm.Load:
			in = r.load()
		case restartfsm.Probe:
			in = r.probe()
		case restartfsm.Watch:
			in = r.watch(a)
		case restartfsm.Apply:
			r.cfg.Apply(r.event)
			in = r.next()
		case restartfsm.Wait:
			in = r.next()
		case restartfsm.Sync:
			if a.ApplyFirst {
				r.cfg.Apply(r.event)
			}
			r.stopWatch()
			return Result{Synced: true, ResourceVersion: a.ResourceVersion}
		case restartfsm.Fallback:
			r.stopWatch()
			return Result{Reason: a.Reason, Err: a.Err}
		default:
			r.stopWatch()
			return Result{Reason: restartfsm.Failed, Err: fmt.Errorf("catchup: unexpected action %d", a.Kind)}
		}
		if in == nil {
			return r.stopped()
		}
		a = r.m.Step(in)
	}
}

func (r *run) load() restartfsm.Input {
	rv, err := r.cfg.Load()
	r.loaded = rv
	return restartfsm.Loaded{ResourceVersion: rv, Err: err, Missing: snapshot.ReasonOf(err) == snapshot.MissingReason}
}

func (r *run) probe() restartfsm.Input {
	obj, err := r.cfg.ListerWatcher.ListWithContext(r.ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return restartfsm.Probed{Err: err}
	}
	list, err := meta.ListAccessor(obj)
	if err != nil {
		return restartfsm.Probed{Err: err}
	}
	if r.cfg.CheckProbe != nil {
		if err := r.cfg.CheckProbe(obj, r.loaded); err != nil {
			return restartfsm.Probed{Refused: err}
		}
	}
	return restartfsm.Probed{ResourceVersion: list.GetResourceVersion()}
}

func (r *run) watch(a restartfsm.Action) restartfsm.Input {
	r.stopWatch()
	timeout := int64(a.Timeout / time.Second)
	w, err := r.cfg.ListerWatcher.WatchWithContext(r.ctx, metav1.ListOptions{
		ResourceVersion: a.ResourceVersion, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		return restartfsm.WatchFailed{Err: err}
	}
	r.w = w
	return restartfsm.WatchOpened{}
}

// next waits for the watch's next event, its end or the deadline; nil when
// the context ends first.
func (r *run) next() restartfsm.Input {
	select {
	case ev, ok := <-r.w.ResultChan():
		if !ok {
			return restartfsm.WatchFailed{}
		}
		r.event = ev
		return eventInput(ev)
	case <-r.deadline:
		return restartfsm.DeadlinePassed{}
	case <-r.ctx.Done():
		return nil
	}
}

// errNoVersion is an event whose object has no metadata to read a
// resourceVersion from.
var errNoVersion = errors.New("catchup: watch event without a resourceVersion")

func eventInput(ev watch.Event) restartfsm.Input {
	if ev.Type == watch.Error {
		return restartfsm.WatchFailed{Err: apierrors.FromObject(ev.Object)}
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return restartfsm.WatchFailed{Err: fmt.Errorf("%w: %v", errNoVersion, err)}
	}
	if ev.Type == watch.Bookmark {
		return restartfsm.Bookmark{ResourceVersion: m.GetResourceVersion()}
	}
	return restartfsm.Event{ResourceVersion: m.GetResourceVersion()}
}

// sleep waits d, or reports false when the context ends first.
func (r *run) sleep(d time.Duration) bool {
	select {
	case <-r.cfg.Clock.After(d):
		return true
	case <-r.ctx.Done():
		return false
	}
}

func (r *run) stopped() Result {
	r.stopWatch()
	return Result{Err: r.ctx.Err()}
}

func (r *run) stopWatch() {
	if r.w != nil {
		r.w.Stop()
		r.w = nil
	}
}
