package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// controllerTestQueue is an atomic RealFIFO, the default informer queue.
func controllerTestQueue() *RealFIFO {
	return NewRealFIFOWithOptions(RealFIFOOptions{KeyFunction: MetaNamespaceKeyFunc, AtomicEvents: true, EmitDeltaTypeBookmark: true})
}

func controllerTestRun(c Controller) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.RunWithContext(ctx) }()
	return func() { cancel(); <-done }
}

func TestC1_ConfigCarriesEveryClientGoField(t *testing.T) {
	_, lw := informerTestServer("a")
	cfg := Config{
		Queue: controllerTestQueue(), ListerWatcher: lw,
		Process:                      func(interface{}, bool) error { return nil },
		ProcessBatch:                 func([]Delta, bool) error { return nil },
		ObjectType:                   &v1.Pod{},
		ObjectDescription:            "pods",
		FullResyncPeriod:             time.Minute,
		MinWatchTimeout:              time.Minute,
		ShouldResync:                 func() bool { return true },
		WatchErrorHandler:            func(*clientcache.Reflector, error) {},
		WatchErrorHandlerWithContext: func(context.Context, *clientcache.Reflector, error) {},
		WatchListPageSize:            10,
	}
	c := New(&cfg)
	cfg.Queue = nil
	assert.NotNil(t, c.(*controller).config.Queue, "New copies the Config")
}

func TestC2_RunClosesQueueAndReturnsAfterReflector(t *testing.T) {
	_, lw := informerTestServer("a")
	q := controllerTestQueue()
	var processed atomic.Int32
	c := New(&Config{Queue: q, ListerWatcher: lw, ObjectType: &v1.Pod{},
		Process: func(interface{}, bool) error { processed.Add(1); return nil }})
	assert.Equal(t, "", c.LastSyncResourceVersion(), "C4: empty before Run")
	stop := controllerTestRun(c)
	informerTestWait(t, "sync", c.HasSyncedChecker())
	assert.True(t, c.HasSynced())
	// The reflector records the synced version after its Replace returns,
	// and the queue may be drained before that, in client-go too.
	assert.Eventually(t, func() bool { return c.LastSyncResourceVersion() == "2" }, 10*time.Second, time.Millisecond)
	stop()
	assert.True(t, q.IsClosed())
	goleak.VerifyNone(t)
}

func TestC2_IncompleteConfigIsReportedNotRun(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no queue":   {ListerWatcher: ListerWatcher(nil), Process: func(interface{}, bool) error { return nil }},
		"no lw":      {Queue: controllerTestQueue(), Process: func(interface{}, bool) error { return nil }},
		"no process": {Queue: controllerTestQueue(), ListerWatcher: newDiffServer(false)},
	} {
		t.Run(name, func(t *testing.T) {
			New(&cfg).Run(make(chan struct{})) // returns at once
		})
	}
	goleak.VerifyNone(t)
}

func TestC3_ProcessErrorsDropItemsAndBatchFollowsGate(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run(map[bool]string{true: "batch", false: "single"}[gate], func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.InOrderInformersBatchProcess, gate)
			s, lw := informerTestServer("a")
			var mu sync.Mutex
			var singles, batches int
			var names []string
			c := New(&Config{Queue: controllerTestQueue(), ListerWatcher: lw, ObjectType: &v1.Pod{},
				Process: func(obj interface{}, _ bool) error {
					mu.Lock()
					defer mu.Unlock()
					singles++
					for _, d := range obj.(Deltas) {
						if p, ok := d.Object.(*v1.Pod); ok {
							names = append(names, p.Name)
						}
					}
					return errors.New("always failing")
				},
				ProcessBatch: func(deltas []Delta, _ bool) error {
					mu.Lock()
					defer mu.Unlock()
					batches++
					for _, d := range deltas {
						names = append(names, d.Object.(*v1.Pod).Name)
					}
					return errors.New("always failing")
				}})
			stop := controllerTestRun(c)
			informerTestWait(t, "sync", c.HasSyncedChecker())
			s.apply(watch.Added, "b")
			s.apply(watch.Added, "c")
			diffEventually(t, "both processed", func() bool { mu.Lock(); defer mu.Unlock(); return len(names) == 2 })
			stop()
			assert.Equal(t, []string{"b", "c"}, names, "failed items are dropped, later ones still come")
			if !gate {
				assert.Zero(t, batches)
			}
		})
	}
	goleak.VerifyNone(t)
}

func TestC5_NewInformerFamily(t *testing.T) {
	_, lw := informerTestServer("a")
	upper := func(obj interface{}) (interface{}, error) {
		p := obj.(*v1.Pod).DeepCopy()
		p.Labels = map[string]string{"transformed": "yes"}
		return p, nil
	}
	idx := Indexers{NamespaceIndex: MetaNamespaceIndexFunc}
	type built struct {
		store     Store
		ctrl      Controller
		indexer   bool
		transform bool
	}
	var seenInStore atomic.Bool
	var store Store
	h := ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
		_, ok, _ := store.Get(obj)
		seenInStore.Store(ok)
	}}
	mk := map[string]func() built{
		"NewInformer": func() built { s, c := NewInformer(lw, &v1.Pod{}, 0, h); return built{s, c, false, false} },
		"NewIndexerInformer": func() built {
			s, c := NewIndexerInformer(lw, &v1.Pod{}, 0, h, idx)
			return built{s, c, true, false}
		},
		"NewTransformingInformer": func() built {
			s, c := NewTransformingInformer(lw, &v1.Pod{}, 0, h, upper)
			return built{s, c, false, true}
		},
		"NewTransformingIndexerInformer": func() built {
			s, c := NewTransformingIndexerInformer(lw, &v1.Pod{}, 0, h, idx, upper)
			return built{s, c, true, true}
		},
		"NewInformerWithOptions": func() built {
			s, c := NewInformerWithOptions(InformerOptions{ListerWatcher: lw, ObjectType: &v1.Pod{}, Handler: h, Indexers: idx, Transform: upper})
			return built{s, c, true, true}
		},
		"NewInformerWithOptions nil handler": func() built {
			s, c := NewInformerWithOptions(InformerOptions{ListerWatcher: lw, ObjectType: &v1.Pod{}})
			return built{s, c, false, false}
		},
	}
	for name, f := range mk {
		t.Run(name, func(t *testing.T) {
			b := f()
			store = b.store
			if b.indexer {
				assert.Contains(t, b.store.(Indexer).GetIndexers(), NamespaceIndex)
			}
			stop := controllerTestRun(b.ctrl)
			informerTestWait(t, "sync", b.ctrl.HasSyncedChecker())
			obj, ok, _ := b.store.GetByKey("ns/a")
			require.True(t, ok)
			assert.Equal(t, b.transform, obj.(*v1.Pod).Labels["transformed"] == "yes")
			stop()
		})
	}
	assert.True(t, seenInStore.Load(), "handler runs after the store write, inline")
	goleak.VerifyNone(t)
}

// controllerTestHandler records calls and what the store held at the time.
type controllerTestHandler struct {
	store Store
	calls []string
}

func (h *controllerTestHandler) OnAdd(obj interface{}, initial bool) {
	h.calls = append(h.calls, "add "+listenerTestDescribe(obj)+map[bool]string{true: " initial", false: ""}[initial])
}
func (h *controllerTestHandler) OnUpdate(o, n interface{}) {
	h.calls = append(h.calls, "update "+listenerTestDescribe(o)+"->"+listenerTestDescribe(n))
}
func (h *controllerTestHandler) OnDelete(obj interface{}) {
	key, _ := DeletionHandlingMetaNamespaceKeyFunc(obj)
	_, stillStored, _ := h.store.GetByKey(key)
	h.calls = append(h.calls, "delete "+listenerTestDescribe(obj)+map[bool]string{true: " (still stored)", false: ""}[stillStored])
}

func newControllerTestApplier() (deltaApplier, *controllerTestHandler) {
	store := newCache(DeletionHandlingMetaNamespaceKeyFunc, Indexers{}, nil)
	h := &controllerTestHandler{store: store}
	return newDeltaApplier(klog.Background(), store, tellHandler(h), nil), h
}

func TestC6_StoreDecidesAddVersusUpdate(t *testing.T) {
	a, h := newControllerTestApplier()
	p1, p2 := newTestPod("ns", "a", "1"), newTestPod("ns", "a", "2")
	require.NoError(t, a.process(Deltas{{Type: Updated, Object: p1}}, true))
	require.NoError(t, a.process(Deltas{{Type: Added, Object: p2}, {Type: Sync, Object: p2}, {Type: Replaced, Object: p2}}, false))
	require.NoError(t, a.process(Deltas{{Type: Deleted, Object: p2}, {Type: Deleted, Object: newTestPod("ns", "never", "9")}}, false))
	assert.Equal(t, []string{
		"add ns/a@1 initial", "update ns/a@1->ns/a@2", "update ns/a@2->ns/a@2", "update ns/a@2->ns/a@2",
		"delete ns/a@2", "delete ns/never@9",
	}, h.calls)
	assert.EqualError(t, a.process("not deltas", false), "object given as Process argument is not Deltas")
}

func TestC6_BookmarkSyncAllAndReplacedAll(t *testing.T) {
	a, h := newControllerTestApplier()
	require.NoError(t, a.apply(Deltas{
		{Type: Added, Object: newTestPod("ns", "keep", "1")},
		{Type: Added, Object: newTestPod("ns", "gone", "1")},
		{Type: Bookmark, Object: BookmarkInfo{ResourceVersion: "7"}},
	}, false))
	assert.Equal(t, "7", a.store.LastStoreSyncResourceVersion())
	h.calls = nil
	require.NoError(t, a.apply(Deltas{{Type: SyncAll, Object: SyncAllInfo{}}}, false))
	assert.ElementsMatch(t, []string{"update ns/keep@1->ns/keep@1", "update ns/gone@1->ns/gone@1"}, h.calls)
	h.calls = nil
	require.NoError(t, a.apply(Deltas{{Type: ReplacedAll, Object: ReplacedAllInfo{ResourceVersion: "9", Objects: []interface{}{
		newTestPod("ns", "new", "8"), newTestPod("ns", "keep", "2"),
	}}}}, true))
	assert.Equal(t, []string{"delete tombstone(ns/gone@1)", "add ns/new@8 initial", "update ns/keep@1->ns/keep@2"}, h.calls,
		"store replaced before handlers; deletes first, then list order")
	assert.Equal(t, "9", a.store.LastStoreSyncResourceVersion())

	for _, d := range []Delta{{Type: ReplacedAll, Object: 1}, {Type: SyncAll, Object: 1}, {Type: Bookmark, Object: 1}} {
		assert.Error(t, a.apply(Deltas{d}, false), d.Type)
	}
	reported := captureReportedErrors(t)
	h.calls = nil
	require.NoError(t, a.apply(Deltas{{Type: ReplacedAll, Object: ReplacedAllInfo{Objects: []interface{}{"no meta", newTestPod("ns", "new", "9")}}}}, false))
	assert.Equal(t, []string{"Object from a relist not stored: object has no meta: object does not implement the Object interfaces [type string]"}, reported.take())
	assert.Equal(t, []string{"ns/new"}, storeSortedKeys(a.store), "an object without a key costs no other object")
	assert.Equal(t, []string{"delete tombstone(ns/keep@2)", "update ns/new@8->ns/new@9"}, h.calls)
}

func TestC6_StoreErrorAbortsRemainingDeltas(t *testing.T) {
	a, h := newControllerTestApplier()
	err := a.apply(Deltas{{Type: Added, Object: "no meta"}, {Type: Added, Object: newTestPod("ns", "a", "1")}}, false)
	assert.Error(t, err)
	assert.Empty(t, h.calls)
}

func TestC7_BatchTransactionNotifiesOnlySuccessfulWrites(t *testing.T) {
	a, h := newControllerTestApplier()
	require.NoError(t, a.store.Add(newTestPod("ns", "old", "1")))
	err := a.processBatch([]Delta{
		{Type: Added, Object: newTestPod("ns", "a", "1")},
		{Type: Added, Object: "no meta"},
		{Type: Sync, Object: newTestPod("ns", "old", "2")},
		{Type: Deleted, Object: newTestPod("ns", "x", "3")},
	}, true)
	require.Error(t, err)
	if clientGoV038 { // the key error alone, joined (batch_error_next_test.go)
		assert.NotContains(t, err.Error(), "not all items in the batch")
	} else {
		assert.Contains(t, err.Error(), "not all items in the batch successfully processed: ")
	}
	assert.Equal(t, []string{"add ns/a@1 initial", "update ns/old@1->ns/old@2", "delete ns/x@3"}, h.calls)

	err = a.processBatch([]Delta{{Type: Bookmark, Object: BookmarkInfo{}}}, false)
	assert.EqualError(t, err, "Delta type Bookmark is not supported in batch processing")

}

func TestC4_SyncStateDelegatesToTheQueue(t *testing.T) {
	q := controllerTestQueue()
	c := New(&Config{Queue: q, ListerWatcher: newDiffServer(false), Process: func(interface{}, bool) error { return nil }})
	assert.Equal(t, q.HasSyncedChecker(), c.HasSyncedChecker())
	assert.False(t, c.HasSynced())
	require.NoError(t, q.Replace(nil, "5"))
	_, err := q.Pop(func(interface{}, bool) error { return nil })
	require.NoError(t, err)
	assert.True(t, c.HasSynced(), "the queue synced, so did the controller")
	assert.Equal(t, "", c.LastSyncResourceVersion(), "no reflector before Run")
}

func TestG1_GatesReadAtRunForSharedInformersAtConstructionForNewInformer(t *testing.T) {
	_, lw := informerTestServer("a")
	shared := NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil).(*sharedIndexInformer)
	_, plain := NewInformerWithOptions(InformerOptions{ListerWatcher: lw, ObjectType: &v1.Pod{}})
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.AtomicFIFO, false)
	stop := informerTestRun(shared)
	informerTestWait(t, "sync", shared.HasSyncedChecker())
	stop()
	assert.False(t, shared.controller.config.Queue.(*RealFIFO).atomicEvents, "shared informer: gate read in Run")
	assert.True(t, plain.(*controller).config.Queue.(*RealFIFO).atomicEvents, "NewInformer*: gate read at construction")
	goleak.VerifyNone(t)
}

func TestC7_OneFailedWriteReturnsItsOwnError(t *testing.T) {
	a, h := newControllerTestApplier()
	err := a.processBatch([]Delta{{Type: Added, Object: "no meta"}}, false)
	var keyErr KeyError
	assert.ErrorAs(t, err, &keyErr, "a batch of one reports the write's own error")
	assert.Empty(t, h.calls)
}

// TestC3_ProcessErrorLogNamesTheObjectNotItsContents: a Process error
// holding a KeyError is logged with the object's key and type and the
// cause, never the object's contents (a KeyError's own text prints them).
func TestC3_ProcessErrorLogNamesTheObjectNotItsContents(t *testing.T) {
	reported := captureReportedErrors(t)
	s, lw := informerTestServer("a")
	cause := errors.New("no room")
	c := New(&Config{Queue: controllerTestQueue(), ListerWatcher: lw, ObjectType: &v1.Pod{},
		Process: func(obj interface{}, _ bool) error {
			pod, ok := obj.(Deltas).Newest().Object.(*v1.Pod)
			if !ok {
				return nil // the initial ReplacedAll, a bookmark
			}
			pod = pod.DeepCopy()
			pod.Annotations = map[string]string{"password": "s3cr3t"}
			return fmt.Errorf("handling: %w", KeyError{Obj: pod, Err: cause})
		}})
	stop := controllerTestRun(c)
	informerTestWait(t, "sync", c.HasSyncedChecker())
	s.apply(watch.Added, "b")
	var got []string
	diffEventually(t, "reported", func() bool { got = append(got, reported.take()...); return len(got) > 0 })
	stop()
	assert.Equal(t, []string{`Popped item not fully processed: handling: couldn't create key for object "ns/b" of type *v1.Pod: no room []`}, got)
	goleak.VerifyNone(t)
}

func TestWithoutObjectsKeepsIdentityCauseAndChain(t *testing.T) {
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Data: map[string][]byte{"password": []byte("s3cr3t")}}
	cause := errors.New("boom")
	inner := KeyError{Obj: secret, Err: cause}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{inner, `couldn't create key for object "ns/db" of type *v1.Secret: boom`},
		{&inner, `couldn't create key for object "ns/db" of type *v1.Secret: boom`},
		{errors.Join(errors.New("first"), fmt.Errorf("second: %w", inner)), "first\nsecond: couldn't create key for object \"ns/db\" of type *v1.Secret: boom"},
		{KeyError{Obj: Deltas{{Type: Added, Object: secret}}, Err: KeyError{Obj: secret, Err: cause}}, `couldn't create key for object "ns/db" of type *v1.Secret (in Deltas): couldn't create key for object "ns/db" of type *v1.Secret: boom`},
		{KeyError{Obj: DeletedFinalStateUnknown{Key: "ns/db", Obj: secret}, Err: cause}, `couldn't create key for object "ns/db" (a DeletedFinalStateUnknown): boom`},
		{KeyError{Obj: 42, Err: cause}, `couldn't create key for object of type int: boom`},
		{KeyError{Obj: (*v1.Secret)(nil), Err: cause}, `couldn't create key for object of type *v1.Secret: boom`},
	} {
		got := withoutObjects(tc.err)
		assert.Equal(t, tc.want, got.Error())
		assert.NotContains(t, got.Error(), "s3cr3t")
		assert.ErrorIs(t, got, cause)
	}
	plain := errors.New("plain")
	assert.Same(t, plain, withoutObjects(plain), "an error without a KeyError is logged as it is")
}
