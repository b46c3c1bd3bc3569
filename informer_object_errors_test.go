package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/klog/v2"
)

// The rule these tests hold the informer to: one object's failure never
// costs another object. An object whose index function fails is cached and
// left out of that index only; one whose transform or key fails is left
// out; each failure is reported through utilruntime and counted. client-go
// crashes on these inputs, so the oracle is the rule, not client-go.

// objErrEvents records handler calls and lets a test wait for one.
type objErrEvents struct {
	mu   sync.Mutex
	seen map[string]bool
	wake chan struct{}
}

func newObjErrEvents() *objErrEvents {
	return &objErrEvents{seen: map[string]bool{}, wake: make(chan struct{}, 1)}
}

func (e *objErrEvents) record(kind string, obj interface{}) {
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p := obj.(*v1.Pod)
	e.mu.Lock()
	e.seen[fmt.Sprintf("%s %s/%s", kind, p.Namespace, p.Name)] = true
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *objErrEvents) OnAdd(obj interface{}, _ bool) { e.record("add", obj) }
func (e *objErrEvents) OnUpdate(_, obj interface{})   { e.record("update", obj) }
func (e *objErrEvents) OnDelete(obj interface{})      { e.record("delete", obj) }

// waitFor blocks until every one of want has been seen.
func (e *objErrEvents) waitFor(t *testing.T, want ...string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		e.mu.Lock()
		missing := ""
		for _, w := range want {
			if !e.seen[w] {
				missing = w
				break
			}
		}
		e.mu.Unlock()
		if missing == "" {
			return
		}
		select {
		case <-e.wake:
		case <-timeout:
			t.Fatalf("handler never got %q", missing)
		}
	}
}

// objErrIndexed returns the keys under value of the "app" index.
func objErrIndexed(t *testing.T, idx Indexer, value string) []string {
	t.Helper()
	keys, err := idx.IndexKeys("app", value)
	require.NoError(t, err)
	return keys
}

type objErrMode struct {
	name      string
	watchList bool
	gateOff   clientfeatures.Feature
}

var objErrModes = []objErrMode{
	{name: "list", watchList: false},
	{name: "watch-list", watchList: true},
	{name: "list without batch processing", gateOff: clientfeatures.InOrderInformersBatchProcess},
	{name: "watch-list without batch processing", watchList: true, gateOff: clientfeatures.InOrderInformersBatchProcess},
	{name: "list without AtomicFIFO", gateOff: clientfeatures.AtomicFIFO},
}

// objErrEachMode runs f in a subtest per mode, with utilruntime's error
// handlers captured, inside a synctest bubble: the Reflector's backoff
// before a relist runs on the bubble's fake clock, so a relist takes no
// real time. Leaks are checked once the bubble has ended, since goleak
// inside it would count the bubble's own goroutines.
func objErrEachMode(t *testing.T, f func(t *testing.T, mode objErrMode, reported *reportedErrors)) {
	for _, mode := range objErrModes {
		t.Run(mode.name, func(t *testing.T) {
			if mode.gateOff != "" {
				clientfeaturestesting.SetFeatureDuringTest(t, mode.gateOff, false)
			}
			reported := captureReportedErrors(t)
			synctest.Test(t, func(t *testing.T) { f(t, mode, reported) })
			goleak.VerifyNone(t)
		})
	}
}

// objErrInformer builds an informer over srv with an "app" index that
// fails on pods labelled bad=yes, counting object errors in provider.
func objErrInformer(t *testing.T, lw ListerWatcher, provider *objectErrorProvider) (SharedIndexInformer, *objErrEvents) {
	flaky := &storeFlakyIndex{}
	inf := NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, SharedIndexInformerOptions{
		Indexers:                Indexers{"app": flaky.fn, NamespaceIndex: MetaNamespaceIndexFunc},
		Identifier:              storeReservedID(t),
		InformerMetricsProvider: provider,
	})
	events := newObjErrEvents()
	_, err := inf.AddEventHandler(events)
	require.NoError(t, err)
	return inf, events
}

func TestObjectErrorIndexFuncFailureCostsOnlyThatIndexEntry(t *testing.T) {
	objErrEachMode(t, func(t *testing.T, mode objErrMode, reported *reportedErrors) {
		srv := newDiffServer(mode.watchList)
		srv.apply(watch.Added, "x", "bad", "yes")
		srv.apply(watch.Added, "y", "app", "y")
		provider := &objectErrorProvider{}
		inf, events := objErrInformer(t, srv, provider)
		stop := informerTestRun(inf)
		defer stop()
		informerTestWait(t, "sync", inf.HasSyncedChecker())
		idx := inf.GetIndexer()

		// LIST or watch-list start.
		events.waitFor(t, "add ns/x", "add ns/y")
		assert.Equal(t, []string{"ns/x", "ns/y"}, storeSortedKeys(idx), "the failing object is cached, and so is every other")
		assert.Equal(t, []string{"y"}, idx.ListIndexFuncValues("app"), "x is left out of the failing index only")
		assert.Equal(t, []string{"ns/y"}, objErrIndexed(t, idx, "y"))
		keys, err := idx.IndexKeys(NamespaceIndex, "ns")
		require.NoError(t, err)
		assert.Equal(t, []string{"ns/x", "ns/y"}, keys)
		assert.Equal(t, []string{"Object stored but left out of an index: cannot index x [key ns/x index app]"}, reported.take())
		assert.Equal(t, 1, provider.errors.count())

		// Watch add and update.
		srv.apply(watch.Added, "z", "bad", "yes")
		events.waitFor(t, "add ns/z")
		srv.apply(watch.Modified, "y", "bad", "yes")
		events.waitFor(t, "update ns/y")
		assert.Equal(t, []string{"ns/x", "ns/y", "ns/z"}, storeSortedKeys(idx))
		assert.Empty(t, idx.ListIndexFuncValues("app"))
		assert.Equal(t, []string{
			"Object stored but left out of an index: cannot index y [key ns/y index app]",
			"Object stored but left out of an index: cannot index z [key ns/z index app]",
		}, reported.take())
		assert.Equal(t, 3, provider.errors.count())

		// Relist: changes missed by the watch are seen by listing.
		srv.missWhile(func() {
			srv.apply(watch.Added, "w", "bad", "yes")
			srv.apply(watch.Modified, "x", "app", "x")
			srv.apply(watch.Deleted, "z")
		})
		events.waitFor(t, "add ns/w", "update ns/x", "delete ns/z")
		assert.Equal(t, []string{"ns/w", "ns/x", "ns/y"}, storeSortedKeys(idx))
		assert.Equal(t, []string{"ns/x"}, objErrIndexed(t, idx, "x"), "a fixed object joins the index")
		assert.Contains(t, reported.take(), "Object stored but left out of an index: cannot index w [key ns/w index app]")
	})
}

func TestObjectErrorTransformFailureCostsOnlyThatObject(t *testing.T) {
	objErrEachMode(t, func(t *testing.T, mode objErrMode, reported *reportedErrors) {
		srv := newDiffServer(mode.watchList)
		srv.apply(watch.Added, "x", "untransformable", "yes")
		srv.apply(watch.Added, "y")
		provider := &objectErrorProvider{}
		inf, events := objErrInformer(t, srv, provider)
		require.NoError(t, inf.SetTransform(func(obj interface{}) (interface{}, error) {
			if p, ok := obj.(*v1.Pod); ok && p.Labels["untransformable"] == "yes" {
				return nil, errors.New("cannot transform " + p.Name)
			}
			return obj, nil
		}))
		stop := informerTestRun(inf)
		defer stop()
		informerTestWait(t, "sync", inf.HasSyncedChecker())
		events.waitFor(t, "add ns/y")
		assert.Equal(t, []string{"ns/y"}, storeSortedKeys(inf.GetStore()), "x cannot be cached; y is")
		got := reported.take()
		require.Len(t, got, 1)
		assert.Regexp(t, `^Object from a relist left out: .*cannot transform x \[key ns/x\]$`, got[0])
		assert.Equal(t, 1, provider.errors.count())

		// A watch event that cannot be transformed is reported by the
		// Reflector and counted; the next one arrives.
		srv.apply(watch.Added, "z", "untransformable", "yes")
		srv.apply(watch.Added, "v")
		events.waitFor(t, "add ns/v")
		assert.Equal(t, []string{"ns/v", "ns/y"}, storeSortedKeys(inf.GetStore()))
		assert.Len(t, reported.take(), 1)
		assert.Equal(t, 2, provider.errors.count())
	})
}

// objErrListOnly is a ListWatch that does not support watch-list.
type objErrListOnly struct{ *ListWatch }

func (objErrListOnly) IsWatchListSemanticsUnSupported() bool { return true }

// objErrListWatch lists a v1.List holding an object without metadata
// beside a pod, then watches nothing.
func objErrListWatch() ListerWatcher {
	return objErrListOnly{&ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &v1.List{ListMeta: metav1.ListMeta{ResourceVersion: "5"}, Items: []runtime.RawExtension{
				{Object: &metav1.Status{Message: "no metadata"}},
				{Object: newTestPod("ns", "y", "4")},
			}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}}
}

func TestObjectErrorKeyFailureCostsOnlyThatObject(t *testing.T) {
	objErrEachMode(t, func(t *testing.T, mode objErrMode, reported *reportedErrors) {
		if mode.watchList {
			t.Skip("the Reflector drops a watch event without metadata before any key is computed; LIST is the path that reaches keys")
		}
		inf, events := objErrInformer(t, objErrListWatch(), &objectErrorProvider{})
		stop := informerTestRun(inf)
		defer stop()
		informerTestWait(t, "sync", inf.HasSyncedChecker())
		events.waitFor(t, "add ns/y")
		assert.Equal(t, []string{"ns/y"}, storeSortedKeys(inf.GetStore()))
		got := reported.take()
		require.Len(t, got, 1)
		assert.Contains(t, got[0], "object has no meta")
		assert.Contains(t, got[0], "type *v1.Status")
		assert.NotContains(t, got[0], "no metadata", "the object's contents stay out of the log")
	})
}

// objErrPipeline is an informer's path without its Reflector and
// goroutines: the queue the informer builds, its applier and store, and a
// handler keeping the state it was told.
type objErrPipeline struct {
	queue   *RealFIFO
	store   *cache
	apply   deltaApplier
	batch   bool
	told    map[string]*v1.Pod
	invalid []string
}

func newObjErrPipeline(id InformerNameAndResource, provider *objectErrorProvider, batch bool) *objErrPipeline {
	flaky := &storeFlakyIndex{}
	p := &objErrPipeline{batch: batch, told: map[string]*v1.Pod{}}
	p.store = newCache(DeletionHandlingMetaNamespaceKeyFunc, Indexers{"app": flaky.fn}, []StoreOption{WithStoreMetrics(id, provider)})
	logger, q, _ := newInformerQueue(informerQueueOptions{
		logger: klog.Background(), objectType: &v1.Pod{}, store: p.store, identifier: id, metricsProvider: provider,
		transform: func(obj interface{}) (interface{}, error) {
			if pod, ok := obj.(*v1.Pod); ok && pod.Labels["untransformable"] == "yes" {
				return nil, errors.New("cannot transform " + pod.Name)
			}
			return obj, nil
		},
	})
	p.queue = q.(*RealFIFO)
	p.apply = newDeltaApplier(logger, p.store, tellHandler(ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { p.tell("add", obj) },
		UpdateFunc: func(_, obj interface{}) { p.tell("update", obj) },
		DeleteFunc: func(obj interface{}) { p.tell("delete", obj) },
	}), nil)
	return p
}

func (p *objErrPipeline) tell(kind string, obj interface{}) {
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod := obj.(*v1.Pod)
	key := pod.Namespace + "/" + pod.Name
	switch {
	case kind == "delete":
		delete(p.told, key)
	case pod.Labels["untransformable"] == "yes":
		p.invalid = append(p.invalid, kind+" of untransformable "+key)
	default:
		p.told[key] = pod
	}
}

// drain processes everything queued, as the informer's loop would.
func (p *objErrPipeline) drain(t *testing.T) {
	for p.queue.items.Len() > 0 {
		var err error
		if p.batch {
			err = p.queue.PopBatch(p.apply.processBatch, p.apply.process)
		} else {
			_, err = p.queue.Pop(p.apply.process)
		}
		require.NoError(t, err)
	}
}

func objErrRandomPod(rng *rand.Rand, rv int) interface{} {
	name := fmt.Sprint("p", rng.Intn(12))
	switch rng.Intn(8) {
	case 0:
		return newTestPod("ns", name, fmt.Sprint(rv), "bad", "yes")
	case 1:
		return newTestPod("ns", name, fmt.Sprint(rv), "untransformable", "yes")
	default:
		return newTestPod("ns", name, fmt.Sprint(rv), "app", fmt.Sprint("a", rng.Intn(3)))
	}
}

// TestObjectErrorRandomStreamKeepsEveryOtherObject drives an informer's
// queue, applier and store with random watch events and relists, some
// objects failing their index function, transform or key, and checks
// after every step that the store, its index and what the handler was told
// match a model that only leaves out what cannot be cached.
func TestObjectErrorRandomStreamKeepsEveryOtherObject(t *testing.T) {
	for _, mode := range []struct {
		name          string
		atomic, batch bool
	}{{"atomic batch", true, true}, {"atomic single", true, false}, {"non-atomic batch", false, true}, {"non-atomic single", false, false}} {
		t.Run(mode.name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.AtomicFIFO, mode.atomic)
			reported := captureReportedErrors(t)
			id := storeReservedID(t)
			for seed := int64(1); seed <= 6; seed++ {
				objErrRandomRun(t, id, seed, mode.batch)
				reported.take()
			}
		})
	}
}

func objErrRandomRun(t *testing.T, id InformerNameAndResource, seed int64, batch bool) {
	rng := rand.New(rand.NewSource(seed))
	provider := &objectErrorProvider{}
	p := newObjErrPipeline(id, provider, batch)
	model := map[string]*v1.Pod{}
	failures := 0
	for step := 0; step < 300; step++ {
		rv := step + 1
		switch r := rng.Intn(10); {
		case r < 6:
			obj := objErrRandomPod(rng, rv).(*v1.Pod)
			err := p.queue.Add(obj)
			if obj.Labels["untransformable"] == "yes" {
				require.Error(t, err, "seed %d step %d", seed, step)
				failures++
				continue
			}
			require.NoError(t, err)
			model[obj.Namespace+"/"+obj.Name] = obj
		case r < 8:
			key := fmt.Sprint("ns/p", rng.Intn(12))
			if old, ok := model[key]; ok {
				require.NoError(t, p.queue.Delete(old))
				delete(model, key)
			}
		default:
			list := make([]interface{}, rng.Intn(10))
			for i := range list {
				list[i] = objErrRandomPod(rng, rv)
			}
			if rng.Intn(3) == 0 {
				list = append(list, &metav1.Status{Message: "no metadata"})
			}
			require.NoError(t, p.queue.Replace(list, fmt.Sprint(rv)), "seed %d step %d", seed, step)
			model = map[string]*v1.Pod{}
			for _, obj := range list {
				if pod, ok := obj.(*v1.Pod); ok && pod.Labels["untransformable"] != "yes" {
					model[pod.Namespace+"/"+pod.Name] = pod
				}
			}
		}
		if rng.Intn(3) == 0 {
			p.drain(t)
			objErrCheck(t, p, model, fmt.Sprintf("seed %d step %d", seed, step))
		}
	}
	p.drain(t)
	objErrCheck(t, p, model, fmt.Sprintf("seed %d end", seed))
	assert.Greater(t, provider.errors.count(), failures, "seed %d: every failure is counted", seed)
}

// objErrCheck compares the store, its "app" index and the handler's view
// with model.
func objErrCheck(t *testing.T, p *objErrPipeline, model map[string]*v1.Pod, at string) {
	t.Helper()
	require.Empty(t, p.invalid, at)
	want, told := map[string]string{}, map[string]string{}
	wantIndex := map[string][]string{}
	for key, pod := range model {
		want[key] = pod.ResourceVersion
		if pod.Labels["bad"] != "yes" {
			wantIndex[pod.Labels["app"]] = append(wantIndex[pod.Labels["app"]], key)
		}
	}
	for key, pod := range p.told {
		told[key] = pod.ResourceVersion
	}
	stored := map[string]string{}
	for _, obj := range p.store.List() {
		pod := obj.(*v1.Pod)
		stored[pod.Namespace+"/"+pod.Name] = pod.ResourceVersion
	}
	require.Equal(t, want, stored, "store, %s", at)
	require.Equal(t, want, told, "handler, %s", at)
	gotIndex := map[string][]string{}
	for _, v := range p.store.ListIndexFuncValues("app") {
		keys, err := p.store.IndexKeys("app", v)
		require.NoError(t, err)
		gotIndex[v] = keys
	}
	for v := range wantIndex {
		wantIndex[v] = sortedStrings(wantIndex[v])
	}
	require.Equal(t, wantIndex, gotIndex, "index, %s", at)
}
