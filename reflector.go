package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientfeatures "k8s.io/client-go/features"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openinformer/cache/internal/reflectorfsm"
)

const unspecifiedTypeDescription = "<unspecified>"

// Defaults shared with client-go: watches time out after a random 5–10
// minutes, and failures back off from 800ms, doubling up to 30s, forgetting
// the history after two quiet minutes.
const (
	defaultMinWatchTimeout = 5 * time.Minute
	defaultBackoffInit     = 800 * time.Millisecond
	defaultBackoffMax      = 30 * time.Second
	defaultBackoffReset    = 2 * time.Minute
	defaultBackoffFactor   = 2.0
	defaultBackoffJitter   = 1.0
)

// Reflector keeps a store in step with a resource on the API server: it
// lists (or streams, with watch-list) the current state into the store, then
// applies watch events, relisting whenever the watch cannot be resumed.
//
// Its decisions live in internal/reflectorfsm; this type performs them.
type Reflector struct {
	name            string
	typeDescription string
	expectedType    reflect.Type
	expectedGVK     *schema.GroupVersionKind
	store           ReflectorStore
	// rvUpdater is store, if it wants every applied event's version.
	rvUpdater     ResourceVersionUpdater
	listerWatcher ListerWatcherWithContext
	// noListerWatcher is what ListAndWatch returns without a ListerWatcher.
	noListerWatcher error
	resyncPeriod    time.Duration
	clock           clock.Clock
	// runClock times the pause between ListAndWatch attempts in Run. Like
	// client-go it is the real clock whatever Clock the options gave.
	runClock          clock.Clock
	delay             wait.DelayFunc
	logger            klog.Logger
	watchErrorHandler WatchErrorHandlerWithContext
	// descriptor is what watch error handlers receive: client-go's
	// Reflector type, carrying this reflector's name and type description.
	descriptor   *clientcache.Reflector
	useWatchList bool

	// warmStart, when set, supplies the first ListAndWatch's list (a warm
	// restart's caught-up snapshot) or asks it to list from a consistent
	// read; it is called once.
	warmStart warmStartFunc
	// prehold, given by an informer, holds a compact store's objects of a
	// list as they arrive; nil keeps them as they are.
	prehold preholdFunc
	// queue, when the store is a queue of this package, takes objects
	// already transformed; nil for any other store.
	queue *pretransformed

	mu      sync.RWMutex
	machine *reflectorfsm.Machine

	// WatchListPageSize is the page size of LIST requests. Zero means 500
	// for consistent (RV "") and any-age (RV "0") lists and unpaginated
	// otherwise, so that those lists can be served from the watch cache.
	WatchListPageSize int64
	// ShouldResync is asked on every resync tick whether to call the
	// store's Resync; nil means always.
	ShouldResync func() bool
	// MaxInternalErrorRetryDuration is how long a watch ending in an
	// internal server error is simply reopened instead of relisting.
	MaxInternalErrorRetryDuration time.Duration
}

// Name returns the reflector's name.
func (r *Reflector) Name() string { return r.name }

// TypeDescription returns the human-readable name of the reflected type.
func (r *Reflector) TypeDescription() string { return r.typeDescription }

// LastSyncResourceVersion returns the resource version the store was last
// brought to. It may run ahead of what the store's consumers have seen.
func (r *Reflector) LastSyncResourceVersion() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.machine.LastSyncResourceVersion()
}

// DefaultWatchErrorHandler logs a list or watch failure at a level that fits
// it: expirations are routine, a plain EOF is a normal close, anything else
// is reported through HandleError.
func DefaultWatchErrorHandler(ctx context.Context, r *clientcache.Reflector, err error) {
	logger := klog.FromContext(ctx)
	switch {
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		logger.V(4).Info("Watch closed", "reflector", r.Name(), "type", r.TypeDescription(), "err", err)
	case err == io.EOF:
	case err == io.ErrUnexpectedEOF:
		logger.V(1).Info("Watch closed with unexpected EOF", "reflector", r.Name(), "type", r.TypeDescription(), "err", err)
	default:
		utilruntime.HandleErrorWithContext(ctx, err, "Failed to watch", "reflector", r.Name(), "type", r.TypeDescription())
	}
}

// NewNamespaceKeyedIndexerAndReflector returns an Indexer keyed by
// namespace/name with a namespace index, and a Reflector that fills it.
func NewNamespaceKeyedIndexerAndReflector(lw ListerWatcher, expectedType interface{}, resyncPeriod time.Duration) (indexer Indexer, reflector *Reflector) {
	indexer = NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	return indexer, NewReflector(lw, expectedType, indexer, resyncPeriod)
}

// NewReflector returns a Reflector named after the calling source line.
func NewReflector(lw ListerWatcher, expectedType interface{}, store ReflectorStore, resyncPeriod time.Duration) *Reflector {
	return NewReflectorWithOptions(lw, expectedType, store, ReflectorOptions{ResyncPeriod: resyncPeriod})
}

// NewNamedReflector returns a Reflector with the given name.
func NewNamedReflector(name string, lw ListerWatcher, expectedType interface{}, store ReflectorStore, resyncPeriod time.Duration) *Reflector {
	return NewReflectorWithOptions(lw, expectedType, store, ReflectorOptions{Name: name, ResyncPeriod: resyncPeriod})
}

// NewReflectorWithOptions returns a Reflector that keeps store in step with
// the resource lw serves. Only objects of expectedType's Go type (and, for
// an Unstructured with apiVersion and kind, that GVK) are stored; nil
// accepts anything. Whether watch-list streaming is tried first is decided
// here, from the WatchListClient feature gate and lw's opt-out.
func NewReflectorWithOptions(lw ListerWatcher, expectedType interface{}, store ReflectorStore, options ReflectorOptions) *Reflector {
	return newReflector(lw, expectedType, store, options, reflectorHooks{queue: pretransformedOf(store)})
}

// reflectorHooks is what an informer's controller gives its Reflector;
// the zero value is none.
type reflectorHooks struct {
	// warmStart supplies the first ListAndWatch's list (a warm restart).
	warmStart warmStartFunc
	// prehold holds a compact informer's listed and streamed objects in
	// the store's form as they arrive (store.Preheld), for its atomic
	// RealFIFO to carry to the store in one ReplacedAll.
	prehold preholdFunc
	// queue is how the store, a queue of this package, takes objects
	// already transformed (pretransformed); nil for another store.
	queue *pretransformed
}

// newReflector is NewReflectorWithOptions for an informer's controller,
// with its hooks.
func newReflector(lw ListerWatcher, expectedType interface{}, store ReflectorStore, options ReflectorOptions, hooks reflectorHooks) *Reflector {
	c := options.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	minTimeout := defaultMinWatchTimeout
	if options.MinWatchTimeout > minTimeout {
		minTimeout = options.MinWatchTimeout
	}
	r := &Reflector{
		name:              options.Name,
		typeDescription:   options.TypeDescription,
		expectedType:      reflect.TypeOf(expectedType),
		expectedGVK:       expectedGVKOf(expectedType),
		store:             store,
		listerWatcher:     listerWatcherOrNil(lw),
		resyncPeriod:      options.ResyncPeriod,
		clock:             c,
		runClock:          clock.RealClock{},
		delay:             reflectorBackoff(options.Backoff).DelayWithReset(c, defaultBackoffReset),
		watchErrorHandler: DefaultWatchErrorHandler,
		warmStart:         hooks.warmStart,
		prehold:           hooks.prehold,
		queue:             hooks.queue,
	}
	r.rvUpdater, _ = store.(ResourceVersionUpdater)
	r.noListerWatcher = reportNilListerWatcher(lw)
	if r.name == "" {
		r.name = reflectorCallSite()
	}
	if r.typeDescription == "" {
		r.typeDescription = typeDescriptionOf(expectedType)
	}
	logger := klog.Background()
	if options.Logger != nil {
		logger = *options.Logger
	}
	r.logger = klog.LoggerWithName(logger, r.name)
	r.useWatchList = watchListEnabled(lw, r.logger)
	r.machine = reflectorfsm.New(reflectorfsm.Config{
		TypeDescription: r.typeDescription,
		UseWatchList:    r.useWatchList,
		MinWatchTimeout: minTimeout,
		MaxWatchTimeout: 2 * minTimeout,
		Rand:            rand.Float64,
	})
	r.descriptor = reflectorDescriptor(r.name, r.typeDescription)
	return r
}

// watchListEnabled reports whether a reflector on lw streams its initial
// list: the WatchListClient gate is on and lw's client supports it.
func watchListEnabled(lw ListerWatcher, logger klog.Logger) bool {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		return false
	}
	if watchlist.DoesClientNotSupportWatchListSemantics(lw) {
		logger.V(2).Info("The client used to build this reflector does not support WatchList semantics; streaming is disabled. This is expected in unit tests but not in production.",
			"feature", clientfeatures.WatchListClient)
		return false
	}
	return true
}

// listerWatcherOrNil keeps a missing ListerWatcher missing, so that
// ListAndWatch can report it instead of panicking.
func listerWatcherOrNil(lw ListerWatcher) ListerWatcherWithContext {
	if lw == nil {
		return nil
	}
	return ToListerWatcherWithContext(lw)
}

// errReflectorNoStore is the error of a Reflector built without a store,
// where client-go would panic.
var errReflectorNoStore = errors.New("reflector has no store")

// reflectorBackoff returns the custom backoff if one was given, else the
// default one.
func reflectorBackoff(custom *wait.Backoff) wait.Backoff {
	if custom != nil {
		return *custom
	}
	return wait.Backoff{
		Duration: defaultBackoffInit,
		Cap:      defaultBackoffMax,
		Steps:    int(math.Ceil(float64(defaultBackoffMax) / float64(defaultBackoffInit))),
		Factor:   defaultBackoffFactor,
		Jitter:   defaultBackoffJitter,
	}
}

func typeDescriptionOf(expectedType interface{}) string {
	if expectedType == nil {
		return unspecifiedTypeDescription
	}
	if gvk := expectedGVKOf(expectedType); gvk != nil {
		return gvk.String()
	}
	return reflect.TypeOf(expectedType).String()
}

// expectedGVKOf returns the GVK an Unstructured example object pins down,
// or nil when the example does not pin one.
func expectedGVKOf(expectedType interface{}) *schema.GroupVersionKind {
	u, ok := expectedType.(*unstructured.Unstructured)
	if !ok || u == nil {
		return nil
	}
	gvk := u.GroupVersionKind()
	if gvk.Empty() {
		return nil
	}
	return &gvk
}

// reflectorPackage is this package's import path; frames inside it are
// skipped when naming a reflector after its caller.
var reflectorPackage = reflect.TypeOf(Reflector{}).PkgPath()

// reflectorCallSite names a reflector after the first caller outside this
// package, as "path/file.go:line" with client-go's trimming of the path. A
// reflector built on a goroutine that started inside this package (an
// informer's Run) has no such caller; it is named after the innermost
// frame instead, this package's own line, as client-go's are when it is
// built from the module cache.
func reflectorCallSite() string {
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	var first runtime.Frame
	for {
		f, more := frames.Next()
		if first.File == "" {
			first = f
		}
		if f.File != "" && !inReflectorPackage(f.Function) && !strings.HasPrefix(f.Function, "runtime.") {
			return callSiteName(f)
		}
		if !more {
			break
		}
	}
	if first.File == "" {
		return "????"
	}
	return callSiteName(first)
}

func inReflectorPackage(function string) bool {
	rest, ok := strings.CutPrefix(function, reflectorPackage)
	return ok && strings.HasPrefix(rest, ".")
}

// callSiteName is "path:line" for a frame. The path is trimmed as client-go
// trims it; a path with none of the prefixes it knows (a checkout outside
// GOPATH, say /home/ci/src-less/cache/reflector.go) is written as the
// frame's package import path and file name instead, so that no build
// machine's directory reaches the logs.
func callSiteName(f runtime.Frame) string {
	file, ok := trimSourcePrefix(f.File)
	if !ok {
		file = framePackage(f.Function) + "/" + path.Base(f.File)
	}
	return fmt.Sprintf("%s:%d", file, f.Line)
}

// trimSourcePrefix drops what precedes a source path's import path the way
// client-go's reflector names do (k8s.io/apimachinery/pkg/util/naming):
// everything up to the last "/vendor/" or "/src/", else up to the last
// "/pkg/", keeping "pkg/" (module cache paths read "pkg/mod/...").
func trimSourcePrefix(file string) (string, bool) {
	if i := strings.LastIndex(file, "/vendor/"); i >= 0 {
		return file[i+len("/vendor/"):], true
	}
	if i := strings.LastIndex(file, "/src/"); i >= 0 {
		return file[i+len("/src/"):], true
	}
	if i := strings.LastIndex(file, "/pkg/"); i >= 0 {
		return file[i+1:], true
	}
	return file, false
}

// framePackage is the import path of a frame's function, as
// runtime.Frame.Function spells it ("example.com/a/b.(*T).M" is
// "example.com/a/b").
func framePackage(function string) string {
	slash := strings.LastIndex(function, "/")
	if dot := strings.Index(function[slash+1:], "."); dot >= 0 {
		return function[:slash+1+dot]
	}
	return function
}

// setWatchErrorHandler replaces the handler Run reports failures to.
func (r *Reflector) setWatchErrorHandler(h WatchErrorHandlerWithContext) {
	r.watchErrorHandler = h
}

// Run calls ListAndWatch until stopCh is closed, reporting failures to the
// watch error handler and backing off between attempts.
func (r *Reflector) Run(stopCh <-chan struct{}) {
	r.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext calls ListAndWatch until ctx is done, reporting failures
// to the watch error handler and backing off between attempts.
func (r *Reflector) RunWithContext(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.V(3).Info("Starting reflector", "type", r.typeDescription, "resyncPeriod", r.resyncPeriod, "reflector", r.name)
	defer logger.V(3).Info("Stopping reflector", "type", r.typeDescription, "resyncPeriod", r.resyncPeriod, "reflector", r.name)
	for {
		r.runOnce(ctx)
		t := r.runClock.NewTimer(r.delay())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if ctx.Err() != nil {
			return
		}
	}
}

func (r *Reflector) runOnce(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	if err := r.ListAndWatchWithContext(ctx); err != nil {
		r.watchErrorHandler(ctx, r.descriptor, err)
	}
}

// ListAndWatch brings the store up to date and then follows the watch
// until it can no longer be resumed. It returns an error only if it never
// got as far as watching.
func (r *Reflector) ListAndWatch(stopCh <-chan struct{}) error {
	return r.ListAndWatchWithContext(wait.ContextForChannel(stopCh))
}

// ListAndWatchWithContext brings the store up to date and then follows the
// watch until it can no longer be resumed. It returns an error only if it
// never got as far as watching, and nil once ctx is done.
func (r *Reflector) ListAndWatchWithContext(ctx context.Context) error {
	klog.FromContext(ctx).V(3).Info("Listing and watching", "type", r.typeDescription, "reflector", r.name)
	switch {
	case r.listerWatcher == nil:
		return r.noListerWatcher
	case r.store == nil:
		return errReflectorNoStore
	}
	run := newReflectorRun(ctx, r)
	defer run.close()
	begin := reflectorfsm.Begin{PageSize: r.WatchListPageSize, MaxInternalErrorRetry: r.MaxInternalErrorRetryDuration}
	if !run.warmStart(&begin) {
		return nil
	}
	act := r.step(begin)
	for {
		if ctx.Err() != nil && act.Abandoned() {
			return nil
		}
		if act.Report != nil {
			utilruntime.HandleErrorWithContext(ctx, act.Report, "Reflector input is faulty", "reflector", r.name, "type", r.typeDescription)
		}
		if act.Note != nil {
			run.note(act)
		}
		if act.Backoff && !run.backoff() {
			return nil
		}
		var in reflectorfsm.Input
		switch act.Kind {
		case reflectorfsm.List:
			in = run.list(act)
		case reflectorfsm.WatchList:
			in = run.watchList(act)
		case reflectorfsm.Replace:
			in = run.replace(act)
		case reflectorfsm.Watch:
			in = run.watch(act)
		default:
			return act.Err
		}
		if in == nil {
			return nil
		}
		act = r.step(in)
	}
}

func (r *Reflector) step(in reflectorfsm.Input) reflectorfsm.Action {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.machine.Step(in)
}

// watching reports whether the reflector follows a watch after its list.
func (r *Reflector) watching() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.machine.Watching()
}

// observe records the resource version of an applied watch event and
// passes it on to a store that tracks versions.
func (r *Reflector) observe(rv string, pastInitialAdds bool) {
	r.mu.Lock()
	recorded := r.machine.ObserveEvent(rv, pastInitialAdds)
	r.mu.Unlock()
	if !recorded {
		return
	}
	if r.rvUpdater != nil {
		r.rvUpdater.UpdateResourceVersion(rv)
	}
}
