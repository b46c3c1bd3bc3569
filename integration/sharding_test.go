package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientcache "k8s.io/client-go/tools/cache"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/integration/apiserver"
	"github.com/openinformer/cache/sharding"
)

// receivedCounter counts the objects a ListerWatcher receives from the server, before any
// client-side filtering: list items and watch events other than bookmarks.
type receivedCounter struct {
	inner   clientcache.ListerWatcherWithContext
	objects atomic.Int64
}

func (c *receivedCounter) List(o metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), o)
}

func (c *receivedCounter) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), o)
}

func (c *receivedCounter) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	list, err := c.inner.ListWithContext(ctx, o)
	if err == nil {
		c.objects.Add(int64(meta.LenList(list)))
	}
	return list, err
}

func (c *receivedCounter) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := c.inner.WatchWithContext(ctx, o)
	if err != nil {
		return nil, err
	}
	cw := &countedWatch{in: w, out: make(chan watch.Event), stop: make(chan struct{}), n: &c.objects}
	go cw.run()
	return cw, nil
}

type countedWatch struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
	n    *atomic.Int64
}

func (w *countedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *countedWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *countedWatch) run() {
	defer close(w.out)
	for ev := range w.in.ResultChan() {
		if ev.Type != watch.Bookmark {
			w.n.Add(1)
		}
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}

// shardReplica is one sharded (or, with lw nil, unsharded) informer and its handler's view.
type shardReplica struct {
	lw       *sharding.ListWatch
	counter  *receivedCounter
	informer clientcache.SharedIndexInformer
	bytes    byteMeter
	syncTime time.Duration
	syncCPU  time.Duration // process CPU while it synced alone, API server included
	syncRead int64         // bytes read until synced
	mu       sync.Mutex
	last     map[string]uint64 // key -> last RV notified; 0 after a delete
	problems []string
}

func (r *shardReplica) saw(obj any, deleted bool) {
	if tomb, ok := obj.(clientcache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u := obj.(*unstructured.Unstructured)
	r.mu.Lock()
	defer r.mu.Unlock()
	key, rv := widgetKey(u), parseRV(u)
	if prev := r.last[key]; prev > rv && !deleted {
		r.problems = append(r.problems, fmt.Sprintf("%s went back from %d to %d", key, prev, rv))
	}
	if deleted {
		rv = 0
	}
	r.last[key] = rv
}

func startShardReplica(t *testing.T, srv *apiserver.Server, shard *sharding.Shard) *shardReplica {
	t.Helper()
	r := &shardReplica{last: map[string]uint64{}}
	client, err := r.bytes.client(srv)
	if err != nil {
		t.Fatal(err)
	}
	r.counter = &receivedCounter{inner: widgetListWatch(client, "")}
	var lw clientcache.ListerWatcher = r.counter
	if shard != nil {
		slw, err := sharding.NewListWatch(r.counter, *shard)
		if err != nil {
			t.Fatal(err)
		}
		r.lw, lw = slw, slw
	}
	r.informer = cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	if _, err := r.informer.AddEventHandler(clientcache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.saw(obj, false) },
		UpdateFunc: func(_, obj any) { r.saw(obj, false) },
		DeleteFunc: func(obj any) { r.saw(obj, true) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	begin, cpu := time.Now(), processCPU()
	go func() {
		defer close(done)
		r.informer.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	eventually(t, 2*time.Minute, "sharded informer synced", func() (bool, string) { return r.informer.HasSynced(), "not synced" })
	r.syncTime, r.syncCPU, r.syncRead = time.Since(begin), processCPU()-cpu, r.bytes.n.Load()
	return r
}

// partitionDiff compares the union of the replicas' caches, and of their handlers' views, with
// want, requiring each key on exactly one replica.
func partitionDiff(want widgetState, replicas []*shardReplica) string {
	union := widgetState{}
	for i, r := range replicas {
		state, err := cacheState(r.informer)
		if err != nil {
			return err.Error()
		}
		for k, rv := range state {
			if _, dup := union[k]; dup {
				return fmt.Sprintf("%s cached by several replicas (also %d)", k, i)
			}
			union[k] = rv
		}
		r.mu.Lock()
		for k, rv := range r.last {
			if rv != state[k] {
				r.mu.Unlock()
				return fmt.Sprintf("replica %d: handler last saw %s@%d, cache has %d", i, k, rv, state[k])
			}
		}
		r.mu.Unlock()
	}
	return want.diff(union)
}

func TestShardedInformers(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("ShardedListAndWatch=%v", gate), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ShardedListAndWatch, gate)
			checkShardedInformers(t, gate)
		})
	}
}

func checkShardedInformers(t *testing.T, gate bool) {
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	client := srv.Dynamic()
	workload{namespaces: testNamespaces, prefix: "before", objects: scaled(1200), writers: 6, payload: 512}.run(t, client)
	whole := startShardReplica(t, srv, nil)
	var replicas []*shardReplica
	for i := range 4 {
		replicas = append(replicas, startShardReplica(t, srv, &sharding.Shard{Index: i, Count: 4}))
	}
	initial := whole.counter.objects.Load()
	for i, r := range replicas {
		got := r.counter.objects.Load()
		t.Logf("gate %v: replica %d received %d objects, %s at sync (unsharded %d, %s), synced in %v using %v CPU (unsharded %v, %v CPU), mode %v",
			gate, i, got, kib(r.syncRead), initial, kib(whole.syncRead), r.syncTime.Round(time.Millisecond), r.syncCPU.Round(time.Millisecond),
			whole.syncTime.Round(time.Millisecond), whole.syncCPU.Round(time.Millisecond), r.lw.Mode())
		if gate && float64(r.syncRead) > 0.35*float64(whole.syncRead) {
			t.Errorf("replica %d read %d of %d bytes at sync with the gate on", i, r.syncRead, whole.syncRead)
		}
		if gate && float64(got) > 0.35*float64(initial) {
			t.Errorf("replica %d received %d of %d objects with the gate on", i, got, initial)
		}
		if !gate && got != initial {
			t.Errorf("replica %d received %d of %d objects with the gate off", i, got, initial)
		}
	}
	workload{namespaces: testNamespaces, prefix: "during", objects: scaled(600), writers: 6, updates: 2, deleteEvery: 3, payload: 512}.run(t, client)
	srv.Compact(context.Background())
	srv.StopAPIServer()
	srv.StartAPIServer()
	workload{namespaces: testNamespaces, prefix: "after", objects: scaled(300), writers: 6, updates: 1, deleteEvery: 2}.run(t, client)
	want := serverState(t, client)
	eventually(t, 2*time.Minute, "replicas partition the server's widgets", func() (bool, string) {
		d := partitionDiff(want, replicas)
		return d == "", d
	})
	wantMode := sharding.ModeServer
	if !gate {
		wantMode = sharding.ModeClient
	}
	total, totalRead := whole.counter.objects.Load(), whole.bytes.n.Load()-whole.syncRead
	for i, r := range replicas {
		if m := r.lw.Mode(); m != wantMode {
			t.Errorf("replica %d: mode %v, want %v", i, m, wantMode)
		}
		r.mu.Lock()
		if len(r.problems) > 0 {
			t.Errorf("replica %d: %v", i, r.problems)
		}
		r.mu.Unlock()
		t.Logf("gate %v: replica %d received %d objects and events in all (unsharded %d), read %s after sync (unsharded %s), holds %d of %d",
			gate, i, r.counter.objects.Load(), total, kib(r.bytes.n.Load()-r.syncRead), kib(totalRead), len(r.informer.GetStore().List()), len(want))
	}
}
