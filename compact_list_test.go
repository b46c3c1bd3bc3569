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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
)

// pagingLW lists from the fake server with resourceVersion "" where the
// reflector asks for "0", so that the server pages the list as etcd does
// (the fake, like the watch cache, serves "0" in one response).
type pagingLW struct{ *fake.Server }

func (lw pagingLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
	if o.ResourceVersion == "0" {
		o.ResourceVersion = ""
	}
	return lw.Server.ListWithContext(ctx, o)
}

// containerTracker counts the listed pods' decoded contents still alive:
// each pod's containers, shared by the list's item and the copy the
// transform sees, live as long as either.
type containerTracker struct {
	mu         sync.Mutex
	transforms int
	containers []weak.Pointer[v1.Container]
}

func (c *containerTracker) transform(obj any) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transforms++
	if pod, ok := obj.(*v1.Pod); ok && len(pod.Spec.Containers) > 0 {
		c.containers = append(c.containers, weak.Make(&pod.Spec.Containers[0]))
	}
	return obj, nil
}

func (c *containerTracker) live() int {
	runtime.GC()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, p := range c.containers {
		if p.Value() != nil {
			n++
		}
	}
	return n
}

// A compact informer's LIST holds each pod as it is taken out of the
// list, in one response (the watch cache's) and paged alike: when the
// store takes the objects, only the hot cache's are decoded, where the
// default mode keeps them all. Each object is transformed once, and the
// store and the handlers get every object.
func TestCompactListKeepsFewDecodedObjects(t *testing.T) {
	defer goleak.VerifyNone(t)
	const pods, hot = 1100, 10
	for _, paged := range []bool{false, true} {
		for _, mode := range []storageMode{{name: "decoded"}, {name: "compact", compact: &CompactOptions{HotObjects: hot}}} {
			name := mode.name + "/one-response"
			if paged {
				name = mode.name + "/paged"
			}
			t.Run(name, func(t *testing.T) {
				srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, WatchListUnsupported: true, Objects: fixtures.Objects(fixtures.Pods(2, pods))})
				var lw ListerWatcher = srv
				if paged {
					lw = pagingLW{srv}
				}
				alive, adds := syncTracked(t, mode, lw, pods)
				counts := srv.RequestCounts()
				assert.Equal(t, paged, counts.ListPages > 0, "paged: %v", counts)
				assert.Equal(t, pods, adds, "every object reaches the handler")
				if mode.compact == nil {
					assert.Equal(t, pods, alive[0], "the default store keeps every decoded object")
					return
				}
				for _, n := range alive {
					assert.LessOrEqual(t, n, hot+1, "decoded objects alive during the sync: %v", alive)
				}
			})
		}
	}
}

// syncTracked syncs mode's informer over lw and returns the decoded pods
// alive at each of its store's holds (sampled once per pods holds) and the
// handler's count of initial adds.
func syncTracked(t *testing.T, mode storageMode, lw ListerWatcher, pods int) (alive []int, adds int) {
	inf := mode.newInformer(lw, &v1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	tracker := &containerTracker{}
	require.NoError(t, inf.SetTransform(tracker.transform))
	probeStore(inf, &probeForm{every: int64(pods), sample: func() { alive = append(alive, tracker.live()) }})
	var mu sync.Mutex
	reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(any) {
		mu.Lock()
		defer mu.Unlock()
		adds++
	}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced))
	require.Len(t, inf.GetStore().ListKeys(), pods)
	tracker.mu.Lock()
	assert.Equal(t, pods, tracker.transforms, "one transform per object")
	tracker.mu.Unlock()
	require.NotEmpty(t, alive)
	mu.Lock()
	defer mu.Unlock()
	return alive, adds
}
