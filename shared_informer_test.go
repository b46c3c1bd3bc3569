package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
)

// controller-runtime's cache.Options.NewInformer field type.
var _ func(clientcache.ListerWatcher, runtime.Object, time.Duration, clientcache.Indexers) clientcache.SharedIndexInformer = NewSharedIndexInformer

// informerTestServer returns a list-mode fake server holding pods
// ns/<name> at resource versions 2, 3, ...
func informerTestServer(names ...string) (*diffServer, ListerWatcher) {
	s := newDiffServer(false)
	for _, n := range names {
		s.apply(watch.Added, n)
	}
	return s, s
}

// informerTestRun runs inf until the returned stop is called; stop waits
// for Run to return.
func informerTestRun(inf SharedIndexInformer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	return func() { cancel(); <-done }
}

func informerTestWait(t *testing.T, what string, c DoneChecker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.True(t, WaitFor(ctx, "", c), what)
}

func TestI1_ConstructorsKeyByNamespaceAndName(t *testing.T) {
	_, lw := informerTestServer("a")
	for name, inf := range map[string]SharedIndexInformer{
		"shared":      NewSharedInformer(lw, &v1.Pod{}, 0).(SharedIndexInformer),
		"index":       NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil),
		"withOptions": NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, SharedIndexInformerOptions{Indexers: Indexers{NamespaceIndex: MetaNamespaceIndexFunc}}),
	} {
		t.Run(name, func(t *testing.T) {
			stop := informerTestRun(inf)
			informerTestWait(t, "sync", inf.HasSyncedChecker())
			_, exists, err := inf.GetStore().GetByKey("ns/a")
			require.NoError(t, err)
			assert.True(t, exists)
			require.NoError(t, inf.AddIndexers(Indexers{"extra": MetaNamespaceIndexFunc}), "nil indexers do not make AddIndexers panic")
			stop()
		})
	}
	goleak.VerifyNone(t)
}

func TestI2_RunTwiceWarnsAndRunWaitsForHandlers(t *testing.T) {
	_, lw := informerTestServer("a")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	_, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(interface{}) { entered <- struct{}{}; <-gate }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	<-entered
	assert.True(t, inf.(*sharedIndexInformer).HasStarted())
	inf.Run(make(chan struct{})) // returns at once
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned while a handler call was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	<-done
	assert.True(t, inf.IsStopped())
	goleak.VerifyNone(t)
}

func TestI3_HasSyncedLatchesAndNamesItself(t *testing.T) {
	_, lw := informerTestServer("a")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	assert.Equal(t, "SharedIndexInformer *v1.Pod", inf.HasSyncedChecker().Name())
	assert.False(t, inf.HasSynced())
	stop := informerTestRun(inf)
	informerTestWait(t, "sync", inf.HasSyncedChecker())
	stop()
	assert.True(t, inf.HasSynced(), "latched after stop")

	// In a bubble, synctest.Wait returns once the informer has failed its
	// first list and waits in its backoff: stopped there, it never syncs.
	synctest.Test(t, func(t *testing.T) {
		s, lw2 := informerTestServer("a")
		s.block()
		never := NewSharedIndexInformer(lw2, &v1.Pod{}, 0, nil)
		stop := informerTestRun(never)
		synctest.Wait()
		stop()
		assert.False(t, never.HasSynced(), "never synced when stopped before syncing")
	})
	goleak.VerifyNone(t)
}

func TestI4_LastSyncResourceVersionAndControllerView(t *testing.T) {
	_, lw := informerTestServer("a", "b")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	assert.Equal(t, "", inf.LastSyncResourceVersion())
	ctrl := inf.GetController()
	ctrl.Run(nil) // no-op
	ctrl.RunWithContext(context.Background())
	assert.False(t, ctrl.HasSynced())
	stop := informerTestRun(inf)
	informerTestWait(t, "sync", ctrl.HasSyncedChecker())
	// The reflector records the synced version after the queue accepted the
	// list, so the sync may be observed a moment earlier (in client-go too).
	assert.Eventually(t, func() bool { return inf.LastSyncResourceVersion() == "3" }, 10*time.Second, time.Millisecond)
	assert.Equal(t, "3", ctrl.LastSyncResourceVersion())
	stop()
	goleak.VerifyNone(t)
}

func TestI5_GetStoreAndGetIndexerAreLive(t *testing.T) {
	s, lw := informerTestServer("a")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	store, indexer := inf.GetStore(), inf.GetIndexer()
	stop := informerTestRun(inf)
	informerTestWait(t, "sync", inf.HasSyncedChecker())
	s.apply(watch.Added, "b")
	diffEventually(t, "b cached", func() bool { _, ok, _ := store.GetByKey("ns/b"); return ok })
	assert.Len(t, indexer.List(), 2)
	stop()
	goleak.VerifyNone(t)
}

func TestI6_SettersRefusedOnceStartedLastCallWins(t *testing.T) {
	_, lw := informerTestServer("a")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	label := func(v string) TransformFunc {
		return func(obj interface{}) (interface{}, error) {
			p := obj.(*v1.Pod).DeepCopy()
			p.Labels = map[string]string{"t": v}
			return p, nil
		}
	}
	require.NoError(t, inf.SetTransform(label("first")))
	require.NoError(t, inf.SetTransform(label("second")))
	require.NoError(t, inf.SetWatchErrorHandler(func(*clientcache.Reflector, error) {}))
	require.NoError(t, inf.SetWatchErrorHandlerWithContext(func(context.Context, *clientcache.Reflector, error) {}))
	stop := informerTestRun(inf)
	informerTestWait(t, "sync", inf.HasSyncedChecker())
	obj, _, _ := inf.GetStore().GetByKey("ns/a")
	assert.Equal(t, "second", obj.(*v1.Pod).Labels["t"])
	assert.EqualError(t, inf.SetTransform(label("late")), "informer has already started")
	assert.EqualError(t, inf.SetWatchErrorHandler(func(*clientcache.Reflector, error) {}), "informer has already started")
	assert.EqualError(t, inf.SetWatchErrorHandlerWithContext(nil), "informer has already started")
	stop()
	goleak.VerifyNone(t)
}

func TestI7_AddEventHandlerRefusedAfterStop(t *testing.T) {
	_, lw := informerTestServer("a")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	_, err := inf.AddEventHandler(nil)
	assert.Error(t, err, "nil handler refused instead of panicking later")
	stop := informerTestRun(inf)
	stop()
	h := &nameTestHandler{}
	reg, err := inf.AddEventHandler(h)
	assert.Nil(t, reg)
	assert.EqualError(t, err, fmt.Sprintf("handler %v was not added to shared informer because it has stopped already", h))
	_, err = inf.AddEventHandlerWithResyncPeriod(h, time.Minute)
	assert.Error(t, err)
	_, err = inf.AddEventHandlerWithOptions(h, HandlerOptions{})
	assert.Error(t, err)
	goleak.VerifyNone(t)
}

func TestI8_ResyncPeriodFloorsAndCheckPeriod(t *testing.T) {
	_, lw := informerTestServer()
	// before is an informer with a 10s default and three handlers added
	// before Run (it is not run: a stopped informer drops its listeners);
	// keep names the handler whose period is observed, the others are
	// removed first.
	before := func(keep string) (*sharedIndexInformer, *testingclock.FakeClock) {
		clk := testingclock.NewFakeClock(time.Now())
		inf := newSharedIndexInformer(lw, &v1.Pod{}, SharedIndexInformerOptions{ResyncPeriod: 10 * time.Second}, clk)
		regs := map[string]ResourceEventHandlerRegistration{}
		regs["def"], _ = inf.AddEventHandler(&nameTestHandler{})
		if keep == "def alone" {
			return inf, clk
		}
		regs["small"], _ = inf.AddEventHandlerWithResyncPeriod(&nameTestHandler{}, 500*time.Millisecond)
		assert.Equal(t, time.Second, inf.resyncCheckPeriod, "before start a smaller period lowers the check period, floored at 1s")
		regs["zero"], _ = inf.AddEventHandlerWithResyncPeriod(&nameTestHandler{}, 0)
		for name, reg := range regs {
			if name != keep {
				require.NoError(t, inf.RemoveEventHandler(reg))
			}
		}
		return inf, clk
	}
	for keep, want := range map[string]time.Duration{
		"def alone": 10 * time.Second,
		"small":     time.Second,
		"def":       10 * time.Second, // existing listeners recomputed, and kept above the check period
		"zero":      0,
	} {
		inf, clk := before(keep)
		assert.Equal(t, want, observedResyncPeriod(t, inf, clk), keep)
	}

	running, _ := before("def")
	stop := informerTestRun(running)
	informerTestWait(t, "sync", running.HasSyncedChecker())
	assert.Equal(t, 1500*time.Millisecond, effectiveResync(running, 1500*time.Millisecond), "a late handler above the check period keeps its own")
	stop()

	clk := testingclock.NewFakeClock(time.Now())
	noResync := newSharedIndexInformer(lw, &v1.Pod{}, SharedIndexInformerOptions{}, clk)
	_, _ = noResync.AddEventHandlerWithResyncPeriod(&nameTestHandler{}, 5*time.Second)
	assert.Equal(t, time.Duration(0), observedResyncPeriod(t, noResync, clk), "an informer created with 0 never resyncs")

	clk = testingclock.NewFakeClock(time.Now())
	started := newSharedIndexInformer(lw, &v1.Pod{}, SharedIndexInformerOptions{ResyncPeriod: 30 * time.Second}, clk)
	stop = informerTestRun(started)
	informerTestWait(t, "sync", started.HasSyncedChecker())
	assert.Equal(t, 30*time.Second, effectiveResync(started, 5*time.Second), "after start raised to the check period")
	stop()
	goleak.VerifyNone(t)
}

// effectiveResync is the period the listener of a handler added to the
// running inf with a requested period gets. A stopped informer drops its
// listeners, so a running one's are not observed by observedResyncPeriod:
// its reflector would take the resyncs due as the fake clock steps.
// internal/fanout's TestI17_ResyncMarksFollowPeriodsAndClock checks that a
// listener is due at the period it is given.
func effectiveResync(inf *sharedIndexInformer, requested time.Duration) time.Duration {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	_, effective := inf.handlerResyncLocked(klog.Background(), &requested)
	return effective
}

// observedResyncPeriod is the resync period of inf's only handler, seen
// the way the reflector sees it: the interval between the first two times
// the processor finds it due, stepping the fake clock clk by 100ms for a
// minute (0 when it is never due). inf is not running, so nothing else
// asks the processor meanwhile.
func observedResyncPeriod(t *testing.T, inf *sharedIndexInformer, clk *testingclock.FakeClock) time.Duration {
	t.Helper()
	const step = 100 * time.Millisecond
	var due []time.Duration
	for elapsed := time.Duration(0); elapsed <= time.Minute && len(due) < 2; elapsed += step {
		if inf.processor.ShouldResync() {
			due = append(due, elapsed)
		}
		clk.Step(step)
	}
	switch len(due) {
	case 0:
		return 0
	case 1:
		t.Fatalf("due once in a minute, at %v", due[0])
	}
	return due[1] - due[0]
}

func TestI9_LateHandlerGetsCachedObjectsFirst(t *testing.T) {
	s, lw := informerTestServer("a", "b")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	stop := informerTestRun(inf)
	informerTestWait(t, "sync", inf.HasSyncedChecker())
	rec := newDiffRecorder()
	reg, err := inf.AddEventHandler(rec)
	require.NoError(t, err)
	s.apply(watch.Modified, "a")
	informerTestWait(t, "late sync", reg.HasSyncedChecker())
	diffEventually(t, "update", func() bool { return rec.seen("ns/a", 4) })
	assert.Equal(t, map[string][]string{
		"ns/a": {"add 2 initial=true", "update 2->4"},
		"ns/b": {"add 3 initial=true"},
	}, rec.sequences(false))
	stop()
	goleak.VerifyNone(t)
}

func TestI10_RegistrationSyncedOnlyAfterInitialAddsReturned(t *testing.T) {
	_, lw := informerTestServer("a", "b")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	gate := make(chan struct{})
	h := ResourceEventHandlerFuncs{AddFunc: func(interface{}) { <-gate }}
	reg, err := inf.AddEventHandler(h)
	require.NoError(t, err)
	assert.Equal(t, "SharedIndexInformer *v1.Pod + event handler github.com/openinformer/cache.TestI10_RegistrationSyncedOnlyAfterInitialAddsReturned",
		reg.HasSyncedChecker().Name())
	stop := informerTestRun(inf)
	informerTestWait(t, "informer sync", inf.HasSyncedChecker())
	assert.False(t, reg.HasSynced(), "initial adds not yet returned")
	gate <- struct{}{}
	assert.False(t, reg.HasSynced())
	gate <- struct{}{}
	informerTestWait(t, "registration sync", reg.HasSyncedChecker())
	stop()
	goleak.VerifyNone(t)
}

func TestI10_PanickingInitialAddStillSyncs(t *testing.T) {
	setReallyCrash(t, false)
	// In a bubble: delivery pauses a second after each recovered panic, as
	// client-go's does, which the bubble's clock makes take no real time.
	synctest.Test(t, func(t *testing.T) {
		_, lw := informerTestServer("a", "b")
		inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
		var mu sync.Mutex
		var seen []string
		reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
			mu.Lock()
			seen = append(seen, obj.(*v1.Pod).Name)
			mu.Unlock()
			panic("handler bug")
		}})
		require.NoError(t, err)
		stop := informerTestRun(inf)
		informerTestWait(t, "registration sync despite panics", reg.HasSyncedChecker())
		mu.Lock()
		assert.ElementsMatch(t, []string{"a", "b"}, seen, "delivery continued after the panic")
		mu.Unlock()
		stop()
	})
	goleak.VerifyNone(t)
}

func TestI12_RemoveEventHandlerIsIdempotentAndAsync(t *testing.T) {
	s, lw := informerTestServer("a")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	rec := newDiffRecorder()
	reg, _ := inf.AddEventHandler(rec)
	keep := newDiffRecorder()
	keepReg, _ := inf.AddEventHandler(keep)
	stop := informerTestRun(inf)
	informerTestWait(t, "sync", reg.HasSyncedChecker())
	require.NoError(t, inf.RemoveEventHandler(reg))
	require.NoError(t, inf.RemoveEventHandler(reg), "idempotent")
	err := inf.RemoveEventHandler(clientcacheForeignHandle{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid key type")
	s.apply(watch.Modified, "a")
	diffEventually(t, "kept handler updated", func() bool { return keep.seen("ns/a", 3) })
	assert.False(t, rec.seen("ns/a", 3), "removed handler hears nothing more")
	stop()
	assert.NoError(t, inf.RemoveEventHandler(keepReg), "after stop: nil")
	goleak.VerifyNone(t)
}

// informerRemoveIgnored is a SharedInformer whose RemoveEventHandler accepts
// any handle, to reach ShutDownEventHandler's ShutdownChan check.
type informerRemoveIgnored struct{ SharedIndexInformer }

func (informerRemoveIgnored) RemoveEventHandler(ResourceEventHandlerRegistration) error { return nil }

func TestI13_ShutDownEventHandlerWaitsForInFlightCall(t *testing.T) {
	_, lw := informerTestServer("a")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	never, _ := inf.AddEventHandler(&nameTestHandler{})
	gate := make(chan struct{})
	entered := make(chan struct{})
	reg, _ := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(interface{}) { close(entered); <-gate }})
	require.NoError(t, ShutDownEventHandler(inf, never), "never started: immediate")
	stop := informerTestRun(inf)
	<-entered
	done := make(chan error)
	go func() { done <- ShutDownEventHandler(inf, reg) }()
	select {
	case <-done:
		t.Fatal("returned while the handler was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	require.NoError(t, <-done)
	assert.EqualError(t, ShutDownEventHandler(informerRemoveIgnored{inf}, clientcacheForeignHandle{}), "handle does not support ShutdownChan()")
	stop()
	goleak.VerifyNone(t)
}

func TestI14_AddIndexersBeforeWhileAndAfterRun(t *testing.T) {
	_, lw := informerTestServer("a")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	byName := func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Name}, nil }
	require.NoError(t, inf.AddIndexers(Indexers{"before": byName}))
	stop := informerTestRun(inf)
	informerTestWait(t, "sync", inf.HasSyncedChecker())
	require.NoError(t, inf.AddIndexers(Indexers{"while": byName}))
	keys, err := inf.GetIndexer().IndexKeys("while", "a")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a"}, keys, "existing objects indexed at once")
	assert.Error(t, inf.AddIndexers(Indexers{"while": byName}), "conflict")
	stop()
	assert.EqualError(t, inf.AddIndexers(Indexers{"after": byName}), "indexer was not added because it has stopped already")
	goleak.VerifyNone(t)
}

func TestI15_IsStoppedOnlyAfterControllerReturned(t *testing.T) {
	_, lw := informerTestServer("a")
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	assert.False(t, inf.IsStopped())
	stop := informerTestRun(inf)
	informerTestWait(t, "sync", inf.HasSyncedChecker())
	assert.False(t, inf.IsStopped())
	stop()
	assert.True(t, inf.IsStopped())
	goleak.VerifyNone(t)
}

// informerTestFakeClockInformer builds an informer whose reflector and
// processor run on clk.
func informerTestFakeClockInformer(lw ListerWatcher, period time.Duration, clk *testingclock.FakeClock) *sharedIndexInformer {
	return newSharedIndexInformer(lw, &v1.Pod{}, SharedIndexInformerOptions{ResyncPeriod: period}, clk)
}

// informerTestDueAndQuiet runs a synced informer on clk over pods a and b
// with two handlers: due resyncs every 10 s, quiet never does.
func informerTestDueAndQuiet(t *testing.T) (clk *testingclock.FakeClock, s *diffServer, due, quiet *diffRecorder, stop func()) {
	clk = testingclock.NewFakeClock(time.Now())
	s, lw := informerTestServer("a", "b")
	inf := informerTestFakeClockInformer(lw, 10*time.Second, clk)
	due, quiet = newDiffRecorder(), newDiffRecorder()
	inf.AddEventHandlerWithResyncPeriod(due, 10*time.Second)
	inf.AddEventHandlerWithResyncPeriod(quiet, 0)
	stop = informerTestRun(inf)
	informerTestWait(t, "sync", inf.HasSyncedChecker())
	return clk, s, due, quiet, stop
}

func TestI18_PeriodicResyncReachesOnlyDueHandlers(t *testing.T) {
	clk, s, due, quiet, stop := informerTestDueAndQuiet(t)
	s.apply(watch.Modified, "a") // the watch is open once this arrives
	diffEventually(t, "watching", func() bool { return quiet.seen("ns/a", 4) })
	diffEventually(t, "resync timer armed", func() bool { return clk.HasWaiters() })
	clk.Step(10 * time.Second)
	diffEventually(t, "resync delivered", func() bool { return due.countSyncs("ns/a") == 1 && due.countSyncs("ns/b") == 1 })
	s.apply(watch.Modified, "b")
	diffEventually(t, "later event", func() bool { return quiet.seen("ns/b", 5) && due.seen("ns/b", 5) })
	assert.Equal(t, 0, quiet.countSyncs("ns/a")+quiet.countSyncs("ns/b"), "not due: no resync notifications")
	assert.Equal(t, []string{"add 3 initial=true", "update 3->3", "update 3->5"}, due.sequences(false)["ns/b"])
	assert.Equal(t, []string{"add 3 initial=true", "update 3->5"}, quiet.sequences(false)["ns/b"])
	stop()
	goleak.VerifyNone(t)
}

func TestI16_UnchangedObjectsOfARelistOnlyReachSyncingHandlers(t *testing.T) {
	// In a bubble: the Reflector pauses between ListAndWatch attempts on the
	// real clock (as client-go does, whatever clock it was given), which the
	// bubble makes fake, so the relist takes no real time.
	synctest.Test(t, func(t *testing.T) {
		clk, s, due, quiet, stop := informerTestDueAndQuiet(t)
		s.apply(watch.Modified, "a")
		diffEventually(t, "watching", func() bool { return quiet.seen("ns/a", 4) })
		diffEventually(t, "resync timer armed", func() bool { return clk.HasWaiters() })
		clk.Step(10 * time.Second) // marks due as syncing, quiet as not
		diffEventually(t, "resync delivered", func() bool { return due.countSyncs("ns/b") == 1 })
		s.missWhile(func() { s.apply(watch.Modified, "a") })
		// The relist waits for the reflector's backoff on the fake clock.
		diffEventually(t, "relist", func() bool {
			clk.Step(2 * time.Second)
			return quiet.seen("ns/a", 5)
		})
		diffEventually(t, "due saw the relist", func() bool { return due.seen("ns/a", 5) })
		assert.Equal(t, []string{"add 3 initial=true"}, quiet.sequences(false)["ns/b"], "unchanged b skipped for a handler not syncing")
		assert.GreaterOrEqual(t, due.countSyncs("ns/b"), 2, "syncing handler got unchanged b from the relist")
		stop()
	})
	goleak.VerifyNone(t)
}

func TestI6_WatchErrorHandlerReceivesListFailures(t *testing.T) {
	s, lw := informerTestServer("a")
	s.block()
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
	got := make(chan error, 10)
	require.NoError(t, inf.SetWatchErrorHandler(func(r *clientcache.Reflector, err error) { got <- err }))
	stop := informerTestRun(inf)
	err := <-got
	assert.Error(t, err)
	assert.False(t, errors.Is(err, context.Canceled))
	stop()
	goleak.VerifyNone(t)
}

func TestBacklogBoundInformerHandlerConvergesOnCache(t *testing.T) {
	m := &listenerTestMetrics{}
	s, lw := informerTestServer("k0", "k1", "k2")
	inf := NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, SharedIndexInformerOptions{MaxPendingNotificationsPerHandler: 8, HandlerMetricsProvider: m})
	gate := make(chan struct{})
	var once sync.Once
	slow := newDiffRecorder()
	slowReg, _ := inf.AddEventHandler(ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, initial bool) {
			once.Do(func() { <-gate })
			slow.OnAdd(obj, initial)
		},
		UpdateFunc: slow.OnUpdate,
		DeleteFunc: slow.OnDelete,
	})
	fast := newDiffRecorder()
	inf.AddEventHandler(fast)
	stop := informerTestRun(inf)
	informerTestWait(t, "informer sync", inf.HasSyncedChecker())
	assert.False(t, slowReg.HasSynced(), "slow handler is stuck in its first initial add")
	exists := map[string]bool{"k0": true, "k1": true, "k2": true}
	k1Changes := 1 // its initial add
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("k%d", (i*7)%13)
		if name == "k1" {
			k1Changes++
		}
		switch {
		case !exists[name]:
			s.apply(watch.Added, name)
			exists[name] = true
		case i%5 == 0:
			s.apply(watch.Deleted, name)
			exists[name] = false
		default:
			s.apply(watch.Modified, name)
		}
	}
	s.apply(watch.Added, "marker")
	final := s.rv()
	diffEventually(t, "fast caught up", func() bool { return fast.seen("ns/marker", final) })
	close(gate)
	informerTestWait(t, "slow registration syncs after the resync", slowReg.HasSyncedChecker())
	diffEventually(t, "slow caught up", func() bool { return slow.seen("ns/marker", final) })

	// Replaying what the slow handler saw must be consistent per key and
	// end at the cache's state, deletions included.
	view := map[string]string{}
	for key, notes := range slow.byKey {
		for _, n := range notes {
			switch n.kind {
			case "add":
				require.NotContains(t, view, key, "add of a key the handler already has")
				view[key] = n.newRV
			case "update":
				require.Equal(t, view[key], n.oldRV, "update must start from what the handler last saw (%s)", key)
				view[key] = n.newRV
			case "delete":
				require.Contains(t, view, key)
				delete(view, key)
			}
		}
	}
	cached := map[string]string{}
	for _, obj := range inf.GetStore().List() {
		k, rv, _ := diffKeyRV(obj)
		cached[k] = rv
	}
	assert.Equal(t, cached, view)
	// Not compared with the fast handler: under load it may lag past the
	// bound too, and collapse.
	assert.Less(t, len(slow.sequences(false)["ns/k1"]), k1Changes, "the slow handler skipped intermediate states")
	assert.Positive(t, m.collapses.Load())
	stop()
	goleak.VerifyNone(t)
}

// informerConsistencyChecker is a handler that replays what it is told into
// its own view and records every notification that does not fit that view.
type informerConsistencyChecker struct {
	mu         sync.Mutex
	view       map[string]string
	violations []string
	slow       bool
	// gate, if non-nil, holds every call until it is closed.
	gate chan struct{}
}

func (c *informerConsistencyChecker) violate(format string, args ...interface{}) {
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
}

func (c *informerConsistencyChecker) OnAdd(obj interface{}, _ bool) {
	k, rv, _ := diffKeyRV(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.view[k]; ok {
		c.violate("add %s@%s while holding @%s", k, rv, old)
	}
	c.view[k] = rv
	c.pause()
}

// pause makes a slow checker fall behind, so its backlog collapses.
func (c *informerConsistencyChecker) pause() {
	if c.gate != nil {
		<-c.gate
	}
	if c.slow {
		time.Sleep(200 * time.Microsecond)
	}
}

func (c *informerConsistencyChecker) OnUpdate(o, n interface{}) {
	k, orv, _ := diffKeyRV(o)
	_, nrv, _ := diffKeyRV(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.view[k] != orv {
		c.violate("update %s %s->%s while holding @%s", k, orv, nrv, c.view[k])
	}
	c.view[k] = nrv
	c.pause()
}

func (c *informerConsistencyChecker) OnDelete(obj interface{}) {
	k, _, _ := diffKeyRV(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.view[k]; !ok {
		c.violate("delete %s not held", k)
	}
	delete(c.view, k)
}

func TestP2_HandlersJoiningLeavingAndCollapsingStayConsistentPerKey(t *testing.T) {
	m := &listenerTestMetrics{}
	s, lw := informerTestServer("k0", "k1", "k2", "k3")
	inf := NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, SharedIndexInformerOptions{MaxPendingNotificationsPerHandler: 16, HandlerMetricsProvider: m})
	stop := informerTestRun(inf)
	informerTestWait(t, "sync", inf.HasSyncedChecker())
	// Held in its first call until the churn is over, this one's backlog
	// collapses whatever the machine's speed.
	held := &informerConsistencyChecker{view: map[string]string{}, gate: make(chan struct{})}
	heldReg, err := inf.AddEventHandler(held)
	require.NoError(t, err)

	churnDone := make(chan struct{})
	go func() {
		defer close(churnDone)
		exists := map[string]bool{"k0": true, "k1": true, "k2": true, "k3": true}
		for i := 0; i < 3000; i++ {
			name := fmt.Sprintf("k%d", i%17)
			switch {
			case !exists[name]:
				s.apply(watch.Added, name)
				exists[name] = true
			case i%7 == 0:
				s.apply(watch.Deleted, name)
				exists[name] = false
			default:
				s.apply(watch.Modified, name)
			}
		}
	}()
	type joined struct {
		c   *informerConsistencyChecker
		reg ResourceEventHandlerRegistration
	}
	var live, gone []joined
	for i := 0; i < 40; i++ {
		c := &informerConsistencyChecker{view: map[string]string{}, slow: i%3 == 0}
		reg, err := inf.AddEventHandler(c)
		require.NoError(t, err)
		live = append(live, joined{c, reg})
		if i%2 == 1 {
			victim := live[0]
			live = live[1:]
			require.NoError(t, ShutDownEventHandler(inf, victim.reg))
			gone = append(gone, victim)
		}
		time.Sleep(time.Millisecond)
	}
	<-churnDone
	close(held.gate)
	live = append(live, joined{held, heldReg})
	s.apply(watch.Added, "marker")
	final := s.rv()
	for _, j := range live {
		diffEventually(t, "caught up", func() bool {
			j.c.mu.Lock()
			defer j.c.mu.Unlock()
			return j.c.view["ns/marker"] == fmt.Sprint(final)
		})
	}
	cached := map[string]string{}
	for _, obj := range inf.GetStore().List() {
		k, rv, _ := diffKeyRV(obj)
		cached[k] = rv
	}
	for i, j := range append(live, gone...) {
		j.c.mu.Lock()
		assert.Empty(t, j.c.violations, "handler %d", i)
		if i < len(live) {
			assert.Equal(t, cached, j.c.view, "live handler %d converged on the cache", i)
		}
		j.c.mu.Unlock()
	}
	assert.Positive(t, m.collapses.Load(), "slow handlers' backlogs collapsed")
	stop()
	goleak.VerifyNone(t)
}
