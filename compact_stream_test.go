package cache

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

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
			_, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(obj any) {
				mu.Lock()
				defer mu.Unlock()
				adds[obj.(*v1.Pod).Name] = true
			}})
			require.NoError(t, err)

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); inf.RunWithContext(ctx) }()
			defer func() { cancel(); <-done }()
			require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced))

			require.Len(t, inf.GetStore().ListKeys(), pods)
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

// In a compact informer, an object the store cannot encode costs no other
// object, whether it is refused as a watch-list stream holds it or in the
// store's Replace after a LIST: it is left out, reported and counted once,
// and the transform runs once per object.
func TestCompactRefusedObjectCostsOnlyThatObject(t *testing.T) {
	objErrEachMode(t, func(t *testing.T, mode objErrMode, reported *reportedErrors) {
		srv := newDiffServer(mode.watchList)
		srv.apply(watch.Added, "x", "unencodable", "yes")
		srv.apply(watch.Added, "y")
		provider := &objectErrorProvider{}
		inf := NewSharedIndexInformerWithOptions(srv, &v1.Pod{}, SharedIndexInformerOptions{
			Indexers:                Indexers{NamespaceIndex: MetaNamespaceIndexFunc},
			Identifier:              storeReservedID(t),
			InformerMetricsProvider: provider,
			Compact:                 &CompactOptions{},
		})
		events := newObjErrEvents()
		_, err := inf.AddEventHandler(events)
		require.NoError(t, err)
		transforms := map[string]int{}
		require.NoError(t, inf.SetTransform(func(obj interface{}) (interface{}, error) {
			p, ok := obj.(*v1.Pod)
			if !ok {
				return obj, nil
			}
			transforms[p.Name]++
			if p.Labels["unencodable"] == "yes" {
				// Compact storage refuses a typed object of another kind.
				p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
			}
			return p, nil
		}))
		stop := informerTestRun(inf)
		defer stop()
		informerTestWait(t, "sync", inf.HasSyncedChecker())
		events.waitFor(t, "add ns/y")
		// Without AtomicFIFO the refusal is reported after the handler hears of y.
		synctest.Wait()
		assert.Equal(t, []string{"ns/y"}, storeSortedKeys(inf.GetStore()), "x cannot be cached; y is")
		got := reported.take()
		require.Len(t, got, 1)
		assert.Contains(t, got[0], `object "ns/x" not stored`)
		assert.Equal(t, 1, provider.errors.count())
		assert.Equal(t, map[string]int{"x": 1, "y": 1}, transforms)
	})
}
