package cache

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"
)

// slowWatchLW lists at once but answers its watch request only when the
// test releases it, with a watch that stays open.
type slowWatchLW struct {
	list     *v1.PodList
	watching chan struct{}
	release  chan struct{}

	mu      sync.Mutex
	watches []*watch.FakeWatcher
}

func (lw *slowWatchLW) List(metav1.ListOptions) (runtime.Object, error) {
	return lw.list.DeepCopy(), nil
}

func (lw *slowWatchLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	lw.watching <- struct{}{}
	<-lw.release
	w := watch.NewFake()
	lw.mu.Lock()
	lw.watches = append(lw.watches, w)
	lw.mu.Unlock()
	return w, nil
}

func (lw *slowWatchLW) IsWatchListSemanticsUnSupported() bool { return true }

// awaitTimer waits until the reflector starts a timer of duration d.
func awaitTimer(t *testing.T, clk *reflectorTestClock, d time.Duration) {
	t.Helper()
	for {
		select {
		case got := <-clk.timers:
			if got == d {
				return
			}
		case <-time.After(5 * time.Second):
			require.FailNow(t, "no timer started", "want a %v timer", d)
		}
	}
}

// runSlowWatchResync runs one ListAndWatch with a 1s resync period whose
// watch request is answered after 3.5s, and returns the store's operations.
func runSlowWatchResync(t *testing.T, ours bool) []string {
	clk := newReflectorTestClock()
	lw := &slowWatchLW{list: reflectorPodList("10", "", newTestPod("ns", "a", "1")), watching: make(chan struct{}, 1), release: make(chan struct{})}
	store := newReflectorTestStore()
	var law func(context.Context) error
	if ours {
		law = NewReflectorWithOptions(lw, &v1.Pod{}, store, ReflectorOptions{Clock: clk, ResyncPeriod: time.Second}).ListAndWatchWithContext
	} else {
		law = clientcache.NewReflectorWithOptions(lw, &v1.Pod{}, store, clientcache.ReflectorOptions{Clock: clk, ResyncPeriod: time.Second}).ListAndWatchWithContext
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		_ = law(ctx)
	}()
	released := false
	defer func() {
		cancel()
		if !released {
			close(lw.release)
		}
		<-returned
	}()

	<-lw.watching
	awaitTimer(t, clk, time.Second)
	for step := 1; step <= 7; step++ {
		clk.Step(500 * time.Millisecond)
		if step%2 == 0 {
			awaitTimer(t, clk, time.Second) // resynced and re-armed
		}
	}
	close(lw.release)
	released = true
	cancel()
	<-returned
	lw.mu.Lock()
	defer lw.mu.Unlock()
	for _, w := range lw.watches {
		assert.True(t, w.IsStopped(), "watch left open")
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	return append([]string(nil), store.ops...)
}

// TestResyncKeepsItsPeriodWhileAWatchIsPending: a server that takes 3.5s
// to answer a watch request does not hold up resyncs.
func TestResyncKeepsItsPeriodWhileAWatchIsPending(t *testing.T) {
	theirs := runSlowWatchResync(t, false)
	ours := runSlowWatchResync(t, true)
	assert.Equal(t, []string{"replace 1 @10", "resync", "resync", "resync"}, theirs)
	assert.Equal(t, theirs, ours)
	goleak.VerifyNone(t)
}

// TestStopWhileAWatchIsPending: the reflector returns when stopped without
// waiting for the server, and the watch that opens afterwards is closed.
func TestStopWhileAWatchIsPending(t *testing.T) {
	lw := &slowWatchLW{list: reflectorPodList("10", ""), watching: make(chan struct{}, 1), release: make(chan struct{})}
	r := NewReflectorWithOptions(lw, &v1.Pod{}, newReflectorTestStore(), ReflectorOptions{Clock: newReflectorTestClock(), ResyncPeriod: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() { returned <- r.ListAndWatchWithContext(ctx) }()
	<-lw.watching
	cancel()
	assert.NoError(t, <-returned)
	close(lw.release)
	goleak.VerifyNone(t)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	require.Len(t, lw.watches, 1)
	assert.True(t, lw.watches[0].IsStopped())
}
