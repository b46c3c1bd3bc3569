package cache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// panicEveryAdd records when each add reaches it and panics on every one,
// like the handlers of client-go's TestEventPanics/many.
type panicEveryAdd struct {
	mu    sync.Mutex
	start time.Time
	calls []string
}

func (h *panicEveryAdd) OnAdd(obj interface{}, _ bool) {
	h.mu.Lock()
	h.calls = append(h.calls, fmt.Sprintf("%s at %v", obj.(*v1.Pod).Name, time.Since(h.start)))
	h.mu.Unlock()
	panic("fake panic")
}

func (h *panicEveryAdd) OnUpdate(_, _ interface{}) {}
func (h *panicEveryAdd) OnDelete(interface{})      {}

func (h *panicEveryAdd) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// panicPauses runs impl's informer over three pods with two handlers that
// panic on every add, ReallyCrash false, in a synctest bubble, and returns
// each handler's calls with the bubble's time since start.
func panicPauses(t *testing.T, impl string) [][]string {
	setReallyCrash(t, false)
	var out [][]string
	synctest.Test(t, func(t *testing.T) {
		_, lw := informerTestServer("pod1", "pod2", "pod3")
		inf := newPanicTestInformer(impl, lw)
		discard := klog.Background().V(100)
		handlers := []*panicEveryAdd{{start: time.Now()}, {start: time.Now()}}
		for _, h := range handlers {
			_, err := inf.AddEventHandlerWithOptions(h, HandlerOptions{Logger: &discard})
			require.NoError(t, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		for _, h := range handlers {
			out = append(out, h.got())
		}
		cancel()
		<-done
	})
	return out
}

// TestListenerDiff_PauseAfterRecoveredPanic: with ReallyCrash false, each
// handler's next call waits one second after a panic, in both
// implementations (the contract client-go's TestEventPanics/many checks);
// two handlers pause independently.
func TestListenerDiff_PauseAfterRecoveredPanic(t *testing.T) {
	want := panicPauses(t, "client-go")
	got := panicPauses(t, "ours")
	calls := []string{"pod1 at 0s", "pod2 at 1s", "pod3 at 2s"}
	assert.Equal(t, [][]string{calls, calls}, want, "client-go")
	assert.Equal(t, want, got, "ours")
	goleak.VerifyNone(t)
}
