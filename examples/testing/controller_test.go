package testing

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
)

// Every test runs in a testing/synctest bubble: the informer's retry backoff,
// the fake server's bookmarks and every timeout run on the bubble's fake
// clock, which jumps ahead whenever all goroutines are blocked. A fault that
// costs seconds of backoff in production costs microseconds here, and
// synctest.Wait replaces polling: once it returns, the informer has done all
// it can do until time moves.
//
// TestMain makes apimachinery's error reporting bubble-safe (see
// fake.PrepareForSynctest) and checks that nothing outlives the tests;
// synctest.Test itself fails a test whose bubble still has goroutines blocked
// when it ends.
func TestMain(m *testing.M) {
	fake.PrepareForSynctest()
	goleak.VerifyTestMain(m)
}

func pod(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// startPhaseCounter serves pods on a fake server, runs a PhaseCounter's
// informer on it until the test ends, waits until it has synced, then lets
// its watch run for a minute of the bubble's time: both reflectors
// (client-go's and ours) treat a watch that ends within a second having
// delivered nothing as broken and relist, so a fault injected at once would
// test that rule instead of the fault. Call it inside the bubble.
func startPhaseCounter(t *testing.T, pods ...runtime.Object) (*fake.Server, *PhaseCounter, cache.ResourceEventHandlerRegistration) {
	t.Helper()
	server := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: pods})
	informer := cache.NewSharedIndexInformer(server, &corev1.Pod{}, 0, cache.Indexers{})
	counter, reg, err := NewPhaseCounter(informer)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced))
	settle(time.Minute)
	return server, counter, reg
}

// settle lets the bubble's clock run for d (long enough for any backoff)
// and returns once every goroutine is idle again.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func setPhase(t *testing.T, server *fake.Server, name string, phase corev1.PodPhase) {
	t.Helper()
	obj, err := server.Get("default", name)
	require.NoError(t, err)
	p := obj.(*corev1.Pod)
	p.Status.Phase = phase
	_, err = server.Update(p)
	require.NoError(t, err)
}

func TestPhaseCounterFollowsChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server, counter, reg := startPhaseCounter(t,
			pod("a", corev1.PodPending), pod("b", corev1.PodRunning), pod("c", corev1.PodRunning))

		// The registration's HasSynced means the handler has seen the initial list.
		require.True(t, reg.HasSynced())
		assert.Equal(t, 2, counter.Count(corev1.PodRunning))

		setPhase(t, server, "a", corev1.PodRunning)
		_, err := server.Delete("default", "b")
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, 2, counter.Count(corev1.PodRunning))
		assert.Equal(t, 2, counter.Known())
	})
}

// TestPhaseCounterSurvivesRelist makes the informer miss a deletion and an
// update behind a 410 Gone; after the relist the controller must still
// converge, the deletion arriving as a tombstone.
func TestPhaseCounterSurvivesRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server, counter, _ := startPhaseCounter(t, pod("a", corev1.PodPending), pod("b", corev1.PodPending))

		release := server.HoldEvents() // the informer's watch sees nothing from here
		setPhase(t, server, "a", corev1.PodSucceeded)
		_, err := server.Delete("default", "b")
		require.NoError(t, err)
		server.Compact()      // the informer's resourceVersion is now too old: 410 Gone
		server.CloseWatches() // and its watch drops before delivering the held events
		release()

		settle(time.Minute)
		assert.Equal(t, 1, counter.Known())
		assert.Equal(t, 1, counter.Count(corev1.PodSucceeded))
		assert.Equal(t, 2, initialEventStreams(server), "one initial sync and one relist, both streamed (watch-list)")
	})
}

// TestPhaseCounterConvergesThroughStackedFaults stacks the faults a
// controller meets on a bad day: a dropped watch whose reconnects are
// throttled twice (429), then a 410 that forces a relist, then a watch that
// drops mid-stream. The informer's backoff makes this take seconds of
// (fake) time; in the bubble it takes milliseconds of real time, and the
// outcome is the same on every run.
func TestPhaseCounterConvergesThroughStackedFaults(t *testing.T) {
	realStart := time.Now()
	synctest.Test(t, func(t *testing.T) {
		server, counter, _ := startPhaseCounter(t,
			pod("a", corev1.PodPending), pod("b", corev1.PodPending), pod("c", corev1.PodPending))
		fakeStart := time.Now()

		// Dropped watch, and the next two attempts to watch again are throttled.
		server.FailNextWatches(2, fake.TooManyRequests(1))
		server.CloseWatches()
		setPhase(t, server, "a", corev1.PodRunning)

		// The informer misses a delete behind a compaction: 410, relist.
		settle(time.Minute)
		release := server.HoldEvents()
		_, err := server.Delete("default", "b")
		require.NoError(t, err)
		server.Compact()
		server.CloseWatches()
		release()

		// The watch drops after one more event; the second write comes on the next one.
		settle(time.Minute)
		server.CloseWatchesAfter(1)
		setPhase(t, server, "c", corev1.PodRunning)
		setPhase(t, server, "a", corev1.PodSucceeded)

		settle(time.Minute)
		assert.Equal(t, 2, counter.Known())
		assert.Equal(t, 1, counter.Count(corev1.PodRunning))
		assert.Equal(t, 1, counter.Count(corev1.PodSucceeded))
		var requests []string
		for _, r := range server.Requests() {
			requests = append(requests, fmt.Sprintf("%s rv=%q streamed=%v", r.Verb, r.Options.ResourceVersion, r.Options.SendInitialEvents != nil && *r.Options.SendInitialEvents))
		}
		assert.Equal(t, []string{
			`watch rv="" streamed=true`,   // initial sync
			`watch rv="4" streamed=false`, // resume after the drop: 429
			`watch rv="4" streamed=false`, // 429
			`watch rv="4" streamed=false`, // resumed
			`watch rv="5" streamed=false`, // after the drop behind the compaction: 410 on the stream
			`watch rv="5" streamed=true`,  // relist
			`watch rv="7" streamed=false`, // resume after the mid-stream drop
		}, requests)
		t.Logf("%v of fake time", time.Since(fakeStart))
	})
	t.Logf("real time: %v", time.Since(realStart))
}

// initialEventStreams counts the watch-list requests: the initial sync and
// every relist.
func initialEventStreams(server *fake.Server) int {
	streams := 0
	for _, r := range server.Requests() {
		if r.Verb == fake.VerbWatch && r.Options.SendInitialEvents != nil && *r.Options.SendInitialEvents {
			streams++
		}
	}
	return streams
}

// blockingHandler records the latest phase it saw per pod, but only once
// its gate opens: a stand-in for a handler stuck on a slow dependency.
type blockingHandler struct {
	gate   chan struct{}
	mu     sync.Mutex
	latest map[string]corev1.PodPhase
}

func (h *blockingHandler) record(obj interface{}) {
	<-h.gate
	p := obj.(*corev1.Pod)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.latest[p.Name] = p.Status.Phase
}

func (h *blockingHandler) phase(name string) corev1.PodPhase {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.latest[name]
}

// TestSlowHandlerDoesNotHoldBackController shows two things: handlers do not
// wait for each other, and a bounded backlog
// (MaxPendingNotificationsPerHandler) keeps a stuck handler's memory flat
// while it still ends on every object's latest state.
func TestSlowHandlerDoesNotHoldBackController(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const pods = 20
		var seed []runtime.Object
		for i := range pods {
			seed = append(seed, pod(fmt.Sprintf("p%d", i), corev1.PodPending))
		}
		server := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: seed})
		informer := cache.NewSharedIndexInformerWithOptions(server, &corev1.Pod{}, cache.SharedIndexInformerOptions{
			MaxPendingNotificationsPerHandler: 8,
		})
		counter, _, err := NewPhaseCounter(informer)
		require.NoError(t, err)
		slow := &blockingHandler{gate: make(chan struct{}), latest: map[string]corev1.PodPhase{}}
		_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    slow.record,
			UpdateFunc: func(_, obj interface{}) { slow.record(obj) },
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); informer.RunWithContext(ctx) }()
		defer func() { cancel(); <-done }()

		for round := range 5 {
			phase := []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded}[round%2]
			for i := range pods {
				setPhase(t, server, fmt.Sprintf("p%d", i), phase)
			}
		}
		// The stuck handler has not returned once, yet the controller is done.
		synctest.Wait()
		assert.Equal(t, pods, counter.Count(corev1.PodRunning))

		close(slow.gate)
		synctest.Wait()
		for i := range pods {
			assert.Equal(t, corev1.PodRunning, slow.phase(fmt.Sprintf("p%d", i)),
				"the slow handler must end on every pod's latest state")
		}
	})
}
