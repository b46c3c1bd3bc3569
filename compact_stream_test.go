package cache

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
)

// decodedTracker counts the decoded objects of an initial sync still alive:
// the transform sees each object of the stream once, as decoded.
type decodedTracker struct {
	mu      sync.Mutex
	objects []weak.Pointer[v1.Pod]
}

func (d *decodedTracker) transform(obj any) (any, error) {
	if pod, ok := obj.(*v1.Pod); ok {
		d.mu.Lock()
		d.objects = append(d.objects, weak.Make(pod))
		d.mu.Unlock()
	}
	return obj, nil
}

// live collects garbage and counts the tracked objects still reachable.
func (d *decodedTracker) live() int {
	runtime.GC()
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, p := range d.objects {
		if p.Value() != nil {
			n++
		}
	}
	return n
}

// A compact informer's watch-list sync keeps the objects it has received
// encoded, so that the decoded list never lives whole: when the stream's
// last object has been held, and again when the store has taken the last
// one, only the hot cache's objects are alive. Handlers still get every
// object, decoded, as an initial add. In the default mode every object is
// alive at those points: the store keeps them.
func TestCompactWatchListKeepsFewDecodedObjects(t *testing.T) {
	defer goleak.VerifyNone(t)
	const pods, hot = 300, 10
	for _, mode := range []storageMode{{name: "decoded"}, {name: "compact", compact: &CompactOptions{HotObjects: hot}}} {
		t.Run(mode.name, func(t *testing.T) {
			srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, Objects: fixtures.Objects(fixtures.Pods(2, pods))})
			inf := mode.newInformer(newStreamingLW(srv), &v1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
			tracker := &decodedTracker{}
			require.NoError(t, inf.SetTransform(tracker.transform))
			var alive []int
			probeStore(inf, &probeForm{every: pods, sample: func() { alive = append(alive, tracker.live()) }})
			var mu sync.Mutex
			adds := map[string]bool{}
			reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(obj any) {
				mu.Lock()
				defer mu.Unlock()
				adds[obj.(*v1.Pod).Name] = true
			}})
			require.NoError(t, err)

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); inf.RunWithContext(ctx) }()
			defer func() { cancel(); <-done }()
			// The handler's own sync: the informer's says only that the
			// store has the list, not that the handler got it all.
			require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced))

			require.Len(t, inf.GetStore().ListKeys(), pods)
			tracker.mu.Lock()
			assert.Len(t, tracker.objects, pods, "one transform per object")
			tracker.mu.Unlock()
			mu.Lock()
			assert.Len(t, adds, pods, "every object reaches the handler")
			mu.Unlock()
			if mode.compact == nil {
				assert.Equal(t, []int{pods}, alive, "the default store keeps every decoded object")
				return
			}
			require.Len(t, alive, 2, "each object is held as it arrives and adopted by the store")
			for _, n := range alive {
				// The hot cache's objects, and the one being held.
				assert.LessOrEqual(t, n, hot+1, "decoded objects alive during the sync: %v", alive)
			}
		})
	}
}
