package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	featuretesting "k8s.io/client-go/features/testing"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// reflectorRunConfig describes one run of our reflector on a script.
type reflectorRunConfig struct {
	noWL     bool
	opts     ReflectorOptions
	expected interface{}
	store    ReflectorStore
	setup    func(*Reflector)
}

type reflectorRunResult struct {
	r      *Reflector
	lw     *reflectorScriptLW
	errs   []error
	timers []time.Duration
}

// runOurReflector runs ListAndWatch as Run would (without the pause
// between attempts) until the script is used up.
func runOurReflector(t *testing.T, cfg reflectorRunConfig, steps ...reflectorStep) reflectorRunResult {
	t.Helper()
	clk := newReflectorTestClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lw := newReflectorScriptLW(t, clk, cancel, steps...)
	lw.noWL = cfg.noWL
	if cfg.store == nil {
		cfg.store = newReflectorTestStore()
	}
	if cfg.expected == nil {
		cfg.expected = &v1.Pod{}
	}
	cfg.opts.Clock = clk
	r := NewReflectorWithOptions(lw, cfg.expected, cfg.store, cfg.opts)
	if cfg.setup != nil {
		cfg.setup(r)
	}
	stepped := clk.autoStep(ctx)
	var errs []error
	for attempts := 0; ctx.Err() == nil; attempts++ {
		require.Less(t, attempts, 100, "reflector does not consume its script")
		errs = append(errs, r.ListAndWatchWithContext(ctx))
	}
	timers := stepped()
	assert.Zero(t, lw.unstopped(), "watchers left open")
	return reflectorRunResult{r: r, lw: lw, errs: errs, timers: timers}
}

func TestF1_ConstructorsAndAccessors(t *testing.T) {
	store := newReflectorTestStore()
	lw := &ListWatch{}
	r := NewNamedReflector("mine", lw, &v1.Pod{}, store, time.Minute)
	assert.Equal(t, "mine", r.Name())
	assert.Equal(t, "*v1.Pod", r.TypeDescription())
	assert.Equal(t, time.Minute, r.resyncPeriod)
	assert.Equal(t, "", r.LastSyncResourceVersion())
	r.WatchListPageSize = 10
	r.ShouldResync = func() bool { return false }
	r.MaxInternalErrorRetryDuration = time.Second

	logger := klog.Background()
	r = NewReflectorWithOptions(lw, nil, store, ReflectorOptions{
		Name: "opt", TypeDescription: "things", ResyncPeriod: 2 * time.Second,
		MinWatchTimeout: time.Hour, Clock: newReflectorTestClock(), Logger: &logger,
		Backoff: &wait.Backoff{Duration: time.Second},
	})
	assert.Equal(t, "opt", r.Name())
	assert.Equal(t, "things", r.TypeDescription())
	assert.Equal(t, "opt", r.descriptor.Name())
	assert.Equal(t, "things", r.descriptor.TypeDescription())
	assert.Equal(t, 2*time.Second, r.resyncPeriod)
}

func TestF3_TypeDescription(t *testing.T) {
	deployment := &unstructured.Unstructured{}
	deployment.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	for _, tc := range []struct {
		expected interface{}
		want     string
		gvk      bool
	}{
		{nil, "<unspecified>", false},
		{&v1.Pod{}, "*v1.Pod", false},
		{&unstructured.Unstructured{}, "*unstructured.Unstructured", false},
		{deployment, "apps/v1, Kind=Deployment", true},
	} {
		r := NewReflector(&ListWatch{}, tc.expected, newReflectorTestStore(), 0)
		theirs := clientcache.NewReflector(&ListWatch{}, tc.expected, newReflectorTestStore(), 0)
		assert.Equal(t, tc.want, r.TypeDescription())
		assert.Equal(t, theirs.TypeDescription(), r.TypeDescription())
		assert.Equal(t, tc.gvk, r.expectedGVK != nil)
	}
}

func TestF4_MinWatchTimeoutOption(t *testing.T) {
	for _, tc := range []struct {
		min    time.Duration
		lo, hi int64
	}{{0, 300, 600}, {time.Minute, 300, 600}, {5 * time.Minute, 300, 600}, {10 * time.Minute, 600, 1200}} {
		res := runOurReflector(t, reflectorRunConfig{noWL: true, opts: ReflectorOptions{MinWatchTimeout: tc.min}},
			listStep(reflectorPodList("1", ""), nil), watchStep(nil), watchStep(nil), watchStep(nil))
		for _, c := range res.lw.recorded() {
			if c.Watch {
				assert.GreaterOrEqual(t, *c.Options.TimeoutSeconds, tc.lo)
				assert.LessOrEqual(t, *c.Options.TimeoutSeconds, tc.hi)
			}
		}
	}
}

func TestF5_BackoffSchedule(t *testing.T) {
	clk := newReflectorTestClock()
	r := NewReflectorWithOptions(&ListWatch{}, nil, newReflectorTestStore(), ReflectorOptions{Clock: clk})
	base := []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond,
		12800 * time.Millisecond, 25600 * time.Millisecond, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, d := range base {
		got := r.delay()
		assert.GreaterOrEqual(t, got, d, "step %d", i)
		assert.Less(t, got, 2*d, "step %d", i)
	}
	clk.Step(2*time.Minute + time.Millisecond)
	got := r.delay()
	assert.GreaterOrEqual(t, got, 800*time.Millisecond, "reset after two quiet minutes")
	assert.Less(t, got, 1600*time.Millisecond)

	custom := NewReflectorWithOptions(&ListWatch{}, nil, newReflectorTestStore(), ReflectorOptions{
		Clock: clk, Backoff: &wait.Backoff{Duration: time.Second, Factor: 3, Steps: 10, Cap: 20 * time.Second}})
	for _, want := range []time.Duration{time.Second, 3 * time.Second, 9 * time.Second, 20 * time.Second, 20 * time.Second} {
		assert.Equal(t, want, custom.delay())
	}
}

func TestF5_BackoffSharedByRetries(t *testing.T) {
	res := runOurReflector(t, reflectorRunConfig{},
		watchStep(reflectorTooMany()),
		watchStep(nil, reflectorErrorEvent(reflectorTooMany())),
		watchStep(apierrors.NewBadRequest("no watch-list")),
		listStep(reflectorPodList("1", ""), nil),
		watchStep(reflectorTooMany()),
		watchStep(nil, reflectorEvent(watch.Added, "a", "2"), reflectorErrorEvent(reflectorTooMany())),
		watchStep(nil))
	require.Len(t, res.timers, 4)
	for i, lo := range []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond} {
		assert.GreaterOrEqual(t, res.timers[i], lo, "step %d", i)
		assert.Less(t, res.timers[i], 2*lo, "step %d", i)
	}
}

func TestF6_RunReportsFailuresAndBacksOff(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clk := newReflectorTestClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	forbidden := apierrors.NewForbidden(reflectorTestGR, "", errors.New("no"))
	lw := newReflectorScriptLW(t, clk, cancel,
		listStep(nil, forbidden),
		listStep(reflectorPodList("1", ""), nil),
		watchStep(apierrors.NewBadRequest("bad watch")),
	)
	lw.noWL = true
	r := NewReflectorWithOptions(lw, &v1.Pod{}, newReflectorTestStore(), ReflectorOptions{Name: "run", Clock: clk})
	r.runClock = clk
	var mu sync.Mutex
	var reported []string
	r.setWatchErrorHandler(func(_ context.Context, d *clientcache.Reflector, err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, d.Name()+"/"+d.TypeDescription()+": "+err.Error())
	})
	stepped := clk.autoStep(ctx)
	r.RunWithContext(ctx)
	timers := stepped()
	assert.Equal(t, []string{
		"run/*v1.Pod: failed to list *v1.Pod: pods is forbidden: no",
		"run/*v1.Pod: bad watch",
	}, reported)
	require.GreaterOrEqual(t, len(timers), 2, "one backoff after each attempt")
	assert.GreaterOrEqual(t, timers[0], 800*time.Millisecond)
	assert.GreaterOrEqual(t, timers[1], 1600*time.Millisecond, "the backoff grows across attempts")
}

func TestF6_RunStopsOnClosedChannel(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	stop := make(chan struct{})
	close(stop)
	calls := 0
	lw := &ListWatch{ListFunc: func(metav1.ListOptions) (runtime.Object, error) { calls++; return nil, errors.New("x") }}
	r := NewReflector(ToListWatcherWithWatchListSemantics(lw, reflectorNoWatchListClient{}), &v1.Pod{}, newReflectorTestStore(), 0)
	r.Run(stop)
	assert.LessOrEqual(t, calls, 1)
}

type reflectorNoWatchListClient struct{}

func (reflectorNoWatchListClient) IsWatchListSemanticsUnSupported() bool { return true }

func TestF7_DefaultWatchErrorHandler(t *testing.T) {
	var handled []string
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, _ ...interface{}) {
		handled = append(handled, msg+": "+err.Error())
	}}
	defer func() { utilruntime.ErrorHandlers = saved }()
	d := reflectorDescriptor("n", "t")
	ctx := context.Background()
	DefaultWatchErrorHandler(ctx, d, reflectorExpired())
	DefaultWatchErrorHandler(ctx, d, apierrors.NewGone("gone"))
	DefaultWatchErrorHandler(ctx, d, io.EOF)
	DefaultWatchErrorHandler(ctx, d, io.ErrUnexpectedEOF)
	DefaultWatchErrorHandler(ctx, d, fmt.Errorf("wrapped: %w", io.EOF))
	DefaultWatchErrorHandler(ctx, d, errors.New("boom"))
	assert.Equal(t, []string{"Failed to watch: wrapped: EOF", "Failed to watch: boom"}, handled)
}

func TestF8_WatchListGateReadAtConstruction(t *testing.T) {
	lw := newReflectorScriptLW(t, newReflectorTestClock(), func() {})
	on := NewReflector(lw, &v1.Pod{}, newReflectorTestStore(), 0)
	assert.True(t, on.useWatchList, "a plain ListerWatcher streams by default")
	lw.noWL = true
	assert.False(t, NewReflector(lw, &v1.Pod{}, newReflectorTestStore(), 0).useWatchList, "opt-out marker")
	lw.noWL = false

	featuretesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	assert.False(t, NewReflector(lw, &v1.Pod{}, newReflectorTestStore(), 0).useWatchList)
	assert.True(t, on.useWatchList, "a reflector keeps the gate it was built with")
	res := runOurReflector(t, reflectorRunConfig{}, listStep(reflectorPodList("1", ""), nil), watchStep(nil))
	assert.False(t, res.lw.recorded()[0].Watch, "gate off: LIST first")
}

func TestF9_WatchListTransformsOnArrival(t *testing.T) {
	var transformed []string
	store := &reflectorTransformingStore{reflectorTestStore: newReflectorTestStore(), transform: func(obj interface{}) (interface{}, error) {
		p := obj.(*v1.Pod).DeepCopy()
		transformed = append(transformed, p.Name)
		p.Labels = map[string]string{"t": "y"}
		return p, nil
	}}
	runOurReflector(t, reflectorRunConfig{store: store},
		watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorEvent(watch.Added, "b", "2"),
			reflectorEvent(watch.Deleted, "b", "3"), reflectorBookmark("5", true)))
	assert.Equal(t, []string{"a", "b"}, transformed)
	assert.Equal(t, []string{"ns/a@1"}, store.contents())
	for _, obj := range store.items {
		assert.Equal(t, "y", obj.(*v1.Pod).Labels["t"])
	}
	assert.Contains(t, store.operations(), "replace 1 @5")
}

type reflectorTransformingStore struct {
	*reflectorTestStore
	transform TransformFunc
}

func (s *reflectorTransformingStore) Transformer() TransformFunc { return s.transform }

func TestF9_WatchListBufferSemantics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []watch.Event
		want   []string
	}{
		{"in order", []watch.Event{reflectorEvent(watch.Added, "a", "1"), reflectorEvent(watch.Added, "b", "2")}, []string{"ns/a@1", "ns/b@2"}},
		{"out of order and duplicate", []watch.Event{reflectorEvent(watch.Added, "b", "1"), reflectorEvent(watch.Added, "a", "2"),
			reflectorEvent(watch.Added, "b", "3")}, []string{"ns/a@2", "ns/b@3"}},
		{"duplicate in order", []watch.Event{reflectorEvent(watch.Added, "a", "1"), reflectorEvent(watch.Added, "a", "2")}, []string{"ns/a@2"}},
		{"modify and delete", []watch.Event{reflectorEvent(watch.Added, "a", "1"), reflectorEvent(watch.Added, "b", "2"),
			reflectorEvent(watch.Modified, "a", "3"), reflectorEvent(watch.Deleted, "b", "4"), reflectorEvent(watch.Modified, "c", "5"),
			reflectorEvent(watch.Deleted, "zz", "6"), reflectorEvent(watch.Added, "b", "7")}, []string{"ns/a@3", "ns/b@7", "ns/c@5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := append(tc.events, reflectorBookmark("9", true))
			sc := reflectorScenario{steps: func() []reflectorStep { return []reflectorStep{watchStep(nil, events...)} }}
			ours := runReflectorScenario(t, sc, true)
			theirs := runReflectorScenario(t, sc, false)
			assert.Equal(t, tc.want, ours.contents)
			assert.Equal(t, theirs.contents, ours.contents)
		})
	}
}

func TestF9_WatchListReplaceFailureFallsBackToList(t *testing.T) {
	store := newReflectorTestStore()
	store.replaceErr = errors.New("full")
	res := runOurReflector(t, reflectorRunConfig{store: store},
		watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorBookmark("5", true)),
		listStep(reflectorPodList("6", ""), nil))
	calls := res.lw.recorded()
	require.GreaterOrEqual(t, len(calls), 2)
	assert.False(t, calls[1].Watch)
	assert.EqualError(t, res.errs[0], "unable to sync list result: full")
}

func TestF10_TableListIsRejected(t *testing.T) {
	table := &unstructured.UnstructuredList{}
	table.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Table"))
	table.SetResourceVersion("1")
	res := runOurReflector(t, reflectorRunConfig{noWL: true, expected: &unstructured.Unstructured{}}, listStep(table, nil))
	assert.EqualError(t, res.errs[0], "failed to list *unstructured.Unstructured: unsupported list gvk: meta.k8s.io/v1, Kind=Table, type: *unstructured.Unstructured")
}

func TestF10_WatchListPageSizeField(t *testing.T) {
	res := runOurReflector(t, reflectorRunConfig{noWL: true, setup: func(r *Reflector) { r.WatchListPageSize = 3 }},
		listStep(reflectorPodList("1", ""), nil))
	assert.Equal(t, int64(3), res.lw.recorded()[0].Options.Limit)
}

func TestF10_ListCancelledMidwayReturnsNil(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	lw := &ListWatch{ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
		cancel()
		<-release
		return reflectorPodList("1", ""), nil
	}}
	r := NewReflector(ToListWatcherWithWatchListSemantics(lw, reflectorNoWatchListClient{}), &v1.Pod{}, newReflectorTestStore(), 0)
	assert.NoError(t, r.ListAndWatchWithContext(ctx))
	close(release)
}

func TestF10_ListPanicIsRaisedInCaller(t *testing.T) {
	lw := &ListWatch{ListFunc: func(metav1.ListOptions) (runtime.Object, error) { panic("lister exploded") }}
	r := NewReflector(ToListWatcherWithWatchListSemantics(lw, reflectorNoWatchListClient{}), &v1.Pod{}, newReflectorTestStore(), 0)
	assert.PanicsWithValue(t, "lister exploded", func() { _ = r.ListAndWatchWithContext(context.Background()) })
}

func TestF11_WatchStartErrorIsReturned(t *testing.T) {
	bad := apierrors.NewBadRequest("nope")
	res := runOurReflector(t, reflectorRunConfig{noWL: true}, listStep(reflectorPodList("1", ""), nil), watchStep(bad))
	assert.Equal(t, bad, res.errs[0])
}

func TestF11_RVFromEmptyListWaitsForNonAdded(t *testing.T) {
	store := reflectorBookmarkTestStore{newReflectorTestStore()}
	res := runOurReflector(t, reflectorRunConfig{noWL: true, store: store},
		listStep(reflectorPodList("", ""), nil),
		watchStep(nil, reflectorEvent(watch.Added, "a", "5"), reflectorEvent(watch.Added, "b", "6"), reflectorEvent(watch.Modified, "a", "7"),
			reflectorEvent(watch.Added, "c", "8")))
	assert.Equal(t, []string{"7", "8"}, store.rvUpdates)
	assert.Equal(t, "8", res.r.LastSyncResourceVersion())
	assert.Equal(t, "8", res.lw.recorded()[2].Options.ResourceVersion)
}

func TestF12_EventChecks(t *testing.T) {
	store := reflectorBookmarkTestStore{newReflectorTestStore()}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", ResourceVersion: "3"}}
	res := runOurReflector(t, reflectorRunConfig{noWL: true, store: store},
		listStep(reflectorPodList("1", ""), nil),
		watchStep(nil,
			reflectorEvent(watch.Added, "a", "2"),
			watch.Event{Type: watch.Added, Object: svc},
			watch.Event{Type: watch.Added, Object: (*v1.Pod)(nil)},
			reflectorBookmark("4", false),
			watch.Event{Type: "Weird", Object: newTestPod("ns", "w", "5")},
		))
	assert.Equal(t, []string{"4"}, store.bookmarks)
	assert.Equal(t, []string{"2", "4", "5"}, store.rvUpdates)
	assert.Equal(t, []string{"ns/a@2"}, store.contents())
	assert.Equal(t, "5", res.lw.recorded()[2].Options.ResourceVersion)
}

func TestF12_GVKAndTableChecks(t *testing.T) {
	want := &unstructured.Unstructured{}
	want.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	good := want.DeepCopy()
	good.SetName("good")
	good.SetResourceVersion("2")
	other := good.DeepCopy()
	other.SetKind("StatefulSet")
	other.SetName("other")
	store := newReflectorTestStore()
	list := &unstructured.UnstructuredList{}
	list.SetResourceVersion("1")
	runOurReflector(t, reflectorRunConfig{noWL: true, store: store, expected: want},
		listStep(list, nil),
		watchStep(nil, watch.Event{Type: watch.Added, Object: good}, watch.Event{Type: watch.Added, Object: other}))
	assert.Equal(t, []string{"good@2"}, store.contents())

	table := &unstructured.Unstructured{}
	table.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Table"))
	table.SetName("t")
	store = newReflectorTestStore()
	runOurReflector(t, reflectorRunConfig{noWL: true, store: store, expected: &unstructured.Unstructured{}},
		listStep(list, nil),
		watchStep(nil, watch.Event{Type: watch.Added, Object: table}))
	assert.Empty(t, store.contents())
}

func TestF13_VeryShortWatchEndsQuietly(t *testing.T) {
	short := watchStep(nil)
	short.advance = 0
	res := runOurReflector(t, reflectorRunConfig{noWL: true}, listStep(reflectorPodList("1", ""), nil), short, listStep(reflectorPodList("2", ""), nil))
	assert.NoError(t, res.errs[0])
	assert.False(t, res.lw.recorded()[2].Watch, "relist after a very short watch")
	assert.Equal(t, "very short watch: x: Unexpected watch close - watch lasted less than a second and no items received",
		(&VeryShortWatchError{Name: "x"}).Error())
}

func TestF13_InternalErrorsRetriedWithinWindow(t *testing.T) {
	internal := reflectorErrorEvent(apierrors.NewInternalError(errors.New("boom")))
	withWindow := func(r *Reflector) { r.MaxInternalErrorRetryDuration = time.Minute }
	res := runOurReflector(t, reflectorRunConfig{noWL: true, setup: withWindow},
		listStep(reflectorPodList("1", ""), nil), watchStep(nil, internal), watchStep(nil, internal), watchStep(nil))
	assert.Len(t, res.lw.recorded(), 5, "internal errors re-watch within the window")

	res = runOurReflector(t, reflectorRunConfig{noWL: true},
		listStep(reflectorPodList("1", ""), nil), watchStep(nil, internal), listStep(reflectorPodList("2", ""), nil))
	assert.Len(t, res.lw.recorded(), 4, "no retry window: relist")
}

func TestF14_Resync(t *testing.T) {
	for _, tc := range []struct {
		name    string
		should  func() bool
		err     error
		resyncs int
	}{
		{"nil ShouldResync always resyncs", nil, nil, 2},
		{"ShouldResync false skips", func() bool { return false }, nil, 0},
		{"resync error ends the watch", nil, errors.New("resync failed"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			clk := newReflectorTestClock()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			held := watchStep(nil)
			held.hold = true
			lw := newReflectorScriptLW(t, clk, cancel, listStep(reflectorPodList("1", ""), nil), held, listStep(reflectorPodList("2", ""), nil))
			lw.noWL = true
			store := newReflectorTestStore()
			store.resyncErr = tc.err
			r := NewReflectorWithOptions(lw, &v1.Pod{}, store, ReflectorOptions{Clock: clk, ResyncPeriod: time.Minute})
			r.ShouldResync = tc.should
			done := make(chan error, 1)
			go func() { done <- r.ListAndWatchWithContext(ctx) }()
			assert.Equal(t, time.Minute, <-clk.timers)
			clk.Step(time.Minute)
			if tc.err == nil {
				assert.Equal(t, time.Minute, <-clk.timers, "re-armed")
				clk.Step(time.Minute)
				assert.Equal(t, time.Minute, <-clk.timers, "re-armed")
				cancel()
			}
			assert.NoError(t, <-done)
			n := 0
			for _, op := range store.operations() {
				if op == "resync" {
					n++
				}
			}
			assert.Equal(t, tc.resyncs, n)
		})
	}
}

func TestF15_CancelledContextReturnsNil(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lw := newReflectorScriptLW(t, newReflectorTestClock(), func() {})
	r := NewReflector(lw, &v1.Pod{}, newReflectorTestStore(), 0)
	assert.NoError(t, r.ListAndWatchWithContext(ctx))
	assert.Empty(t, lw.recorded())

	stop := make(chan struct{})
	close(stop)
	assert.NoError(t, r.ListAndWatch(stop))
}

func TestF15_CancelDuringBackoffReturnsNil(t *testing.T) {
	clk := newReflectorTestClock()
	ctx, cancel := context.WithCancel(context.Background())
	lw := newReflectorScriptLW(t, clk, cancel, watchStep(reflectorTooMany()))
	r := NewReflectorWithOptions(lw, &v1.Pod{}, newReflectorTestStore(), ReflectorOptions{Clock: clk})
	done := make(chan error, 1)
	go func() { done <- r.ListAndWatchWithContext(ctx) }()
	<-clk.timers
	cancel()
	assert.NoError(t, <-done)
}

func TestF2_DefaultNameSkipsThisPackage(t *testing.T) {
	assert.False(t, inReflectorPackage("github.com/openinformer/cache_test.TestX"))
	assert.True(t, inReflectorPackage("github.com/openinformer/cache.NewReflector"))
	assert.False(t, inReflectorPackage("github.com/openinformer/cachex.F"))
}

// TestF2_NamePathTrimmedAsClientGo: paths are trimmed by client-go's rules
// (k8s.io/apimachinery/pkg/util/naming): after the last /vendor/ or /src/,
// else from the last /pkg/ on; a path with none of them is named by the
// frame's import path, never by the build machine's directory.
func TestF2_NamePathTrimmedAsClientGo(t *testing.T) {
	for _, tc := range []struct{ file, function, want string }{
		{"/root/go/pkg/mod/k8s.io/client-go@v0.37.2/tools/cache/reflector.go", "k8s.io/client-go/tools/cache.NewReflectorWithOptions", "pkg/mod/k8s.io/client-go@v0.37.2/tools/cache/reflector.go:7"},
		{"/go/src/k8s.io/kubernetes/vendor/k8s.io/client-go/informers/factory.go", "k8s.io/client-go/informers.(*sharedInformerFactory).Start.func1", "k8s.io/client-go/informers/factory.go:7"},
		{"/home/me/go/src/example.com/app/main.go", "main.main", "example.com/app/main.go:7"},
		{"/work/checkout/reflector.go", "github.com/openinformer/cache.NewReflectorWithOptions", "github.com/openinformer/cache/reflector.go:7"},
		{"/work/checkout/informers/factory.go", "github.com/openinformer/cache/informers.(*factory).Start.func1", "github.com/openinformer/cache/informers/factory.go:7"},
		{"/home/me/app/main.go", "main.main", "main/main.go:7"},
	} {
		assert.Equal(t, tc.want, callSiteName(goruntime.Frame{File: tc.file, Function: tc.function, Line: 7}), tc.file)
	}
}

func TestF1_NamespaceKeyedIndexerAndReflector(t *testing.T) {
	lw := newReflectorScriptLW(t, newReflectorTestClock(), func() {})
	indexer, r := NewNamespaceKeyedIndexerAndReflector(lw, &v1.Pod{}, time.Second)
	require.NotNil(t, indexer)
	assert.Equal(t, indexer, r.store)
	assert.Equal(t, time.Second, r.resyncPeriod)
	require.NoError(t, indexer.Add(newTestPod("ns", "a", "1")))
	got, err := indexer.ByIndex(NamespaceIndex, "ns")
	require.NoError(t, err)
	assert.Len(t, got, 1)
}

// TestF2_NameOfReflectorBuiltOnOwnGoroutine: with no caller outside this
// package the name is this package's own line (client-go's is its own
// reflector.go line in module-cache builds), and never an absolute path.
func TestF2_NameOfReflectorBuiltOnOwnGoroutine(t *testing.T) {
	names := make(chan string, 1)
	go reflectorBuildOnGoroutine(names)
	name := <-names
	assert.NotContains(t, name, "runtime/")
	assert.False(t, strings.HasPrefix(name, "/"), "no build machine path: %s", name)
	_, file, _, _ := goruntime.Caller(0)
	if _, trimmed := trimSourcePrefix(file); !trimmed {
		assert.Regexp(t, `^github\.com/openinformer/cache/reflector\.go:\d+$`, name)
	} else {
		assert.Regexp(t, `reflector\.go:\d+$`, name)
	}
}

// reflectorBuildOnGoroutine stands for an informer's Run: a goroutine whose
// every frame is in this package.
func reflectorBuildOnGoroutine(names chan<- string) {
	names <- NewReflector(&ListWatch{}, nil, newReflectorTestStore(), 0).Name()
}

func TestReflectorMissingPartsAreErrors(t *testing.T) {
	assert.EqualError(t, NewReflector(nil, nil, newReflectorTestStore(), 0).ListAndWatchWithContext(context.Background()), "NewReflector: nil ListerWatcher")
	assert.EqualError(t, NewReflector(&ListWatch{}, nil, nil, 0).ListAndWatchWithContext(context.Background()), "reflector has no store")
}

// TestF10_ListItemsAreCopiedOutOfTheList checks that the objects a LIST
// hands to the store are copies, not pointers into the list's Items array:
// a ListerWatcher that reuses or edits the list it returned (as test fakes
// do) cannot change the cache, and one retained object cannot pin the whole
// list in memory. client-go does the same; this copy is most of the time a
// LIST-path sync takes.
func TestF10_ListItemsAreCopiedOutOfTheList(t *testing.T) {
	list := reflectorPodList("5", "", newTestPod("ns", "a", "1"), newTestPod("ns", "b", "2"))
	store := newReflectorTestStore()
	runOurReflector(t, reflectorRunConfig{noWL: true, store: store}, listStep(list, nil), watchStep(nil))
	require.Len(t, store.items, 2)
	for i := range list.Items {
		stored := store.items["ns/"+list.Items[i].Name].(*v1.Pod)
		assert.NotSame(t, &list.Items[i], stored, "stored object points into the list")
		assert.Equal(t, list.Items[i], *stored)
	}
	list.Items[0].ResourceVersion = "99"
	assert.Equal(t, "1", store.items["ns/a"].(*v1.Pod).ResourceVersion, "editing the returned list changed the cache")
}
