package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fanout"
	"github.com/openinformer/cache/internal/fixtures"
	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/store"
)

// heldBoxInformer is a compact informer (hot cache off unless hot, so
// that every read back is a decode, counted) over a watch-list of pods
// pods, whose initial list therefore reaches the fan-out preheld.
func heldBoxInformer(t *testing.T, pods int, hot bool) (SharedIndexInformer, *viewCounter) {
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, Objects: fixtures.Objects(fixtures.Pods(5, pods))})
	opts := CompactOptions{HotObjects: -1}
	if hot {
		opts = CompactOptions{}
	}
	inf := NewSharedIndexInformerWithOptions(newStreamingLW(srv), &v1.Pod{}, SharedIndexInformerOptions{Compact: &opts})
	return inf, countViews(inf)
}

// verifyNoLeaks checks, once the test's cleanups registered after it have
// run (the informer stopped), that no goroutine is left.
func verifyNoLeaks(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// runHeldBoxInformer runs inf until the test ends.
func runHeldBoxInformer(t *testing.T, inf SharedIndexInformer) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return ctx
}

// The informer's own HasSynced (its store populated) does not wait for its
// handlers' decodes: with the only handler stuck in its first add, the
// informer has synced having decoded at most that one object; the
// registration syncs once the handler has had every object, each decoded
// once.
func TestInformerSyncsBeforeASlowHandlerDecodes(t *testing.T) {
	verifyNoLeaks(t)
	const pods = 300
	inf, views := heldBoxInformer(t, pods, false)
	release := make(chan struct{})
	var adds atomic.Int64
	reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(any) {
		if adds.Add(1) == 1 {
			<-release
		}
	}})
	require.NoError(t, err)
	ctx := runHeldBoxInformer(t, inf)
	require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced))
	assert.LessOrEqual(t, views.kept.Load(), int64(1), "decodes before the informer synced")
	assert.False(t, reg.HasSynced(), "the handler has not had its initial list")
	assert.Len(t, inf.GetStore().ListKeys(), pods)
	close(release)
	require.True(t, WaitForCacheSync(ctx.Done(), reg.HasSynced))
	assert.Equal(t, int64(pods), adds.Load())
	assert.Equal(t, int64(pods), views.kept.Load(), "one decode per object")
}

// Every listener gets the object of a preheld add from one decode: the
// same pointer, decoded once however many handlers there are. With the hot
// cache on, listeners read through it from their goroutines at once (run
// with -race).
func TestListenersShareOneDecode(t *testing.T) {
	for _, hot := range []bool{false, true} {
		t.Run(fmt.Sprintf("hot=%v", hot), func(t *testing.T) {
			verifyNoLeaks(t)
			const pods, handlers = 200, 4
			inf, views := heldBoxInformer(t, pods, hot)
			seen := make([]map[string]any, handlers)
			var regs []ResourceEventHandlerRegistration
			for i := range seen {
				seen[i] = map[string]any{}
				reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(obj any) {
					seen[i][obj.(*v1.Pod).Namespace+"/"+obj.(*v1.Pod).Name] = obj
				}})
				require.NoError(t, err)
				regs = append(regs, reg)
			}
			ctx := runHeldBoxInformer(t, inf)
			for _, reg := range regs {
				require.True(t, WaitForCacheSync(ctx.Done(), reg.HasSynced))
			}
			if !hot {
				assert.Equal(t, int64(pods), views.kept.Load(), "one decode per object for %d handlers", handlers)
			}
			require.Len(t, seen[0], pods)
			for key, obj := range seen[0] {
				for i := 1; i < handlers; i++ {
					assert.Same(t, obj, seen[i][key], "handler %d's %s", i, key)
				}
			}
		})
	}
}

// failingViews is a viewCounter that cannot read back one key.
type failingViews struct {
	*viewCounter
	bad string
}

var errUnreadable = errors.New("unreadable")

func (f *failingViews) View(key string, held any, keep bool) (any, error) {
	if key == f.bad {
		return nil, errUnreadable
	}
	return f.viewCounter.View(key, held, keep)
}

// An object that cannot be read back for the handlers is reported once,
// not delivered to any of them, and still counts as delivered: every
// registration syncs.
func TestUnreadableHeldAddIsReportedAndSyncs(t *testing.T) {
	verifyNoLeaks(t)
	const pods = 50
	reported := captureReportedErrors(t)
	inf, views := heldBoxInformer(t, pods, false)
	bad := fixtures.Pods(5, pods)[7]
	wrapInformerForm(inf, func(form.Form) form.Form {
		return &failingViews{viewCounter: views, bad: bad.Namespace + "/" + bad.Name}
	})
	var adds [2]atomic.Int64
	var regs []ResourceEventHandlerRegistration
	for i := range adds {
		reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(any) { adds[i].Add(1) }})
		require.NoError(t, err)
		regs = append(regs, reg)
	}
	ctx := runHeldBoxInformer(t, inf)
	for _, reg := range regs {
		require.True(t, WaitForCacheSync(ctx.Done(), reg.HasSynced))
	}
	for i := range adds {
		assert.Equal(t, int64(pods-1), adds[i].Load(), "handler %d", i)
	}
	msgs := reported.take()
	require.Len(t, msgs, 1, "reported once for both handlers")
	assert.Contains(t, msgs[0], "unreadable")
	assert.Contains(t, msgs[0], bad.Name)
}

// A collapsed backlog keys a boxed add by its store key, decoding nothing
// on the processLoop. The handler sees the add it was in, then a resync of
// the keys touched, sorted, each box read back as it is delivered (p3
// updated since and p4 deleted are not), and its registration syncs.
func TestBacklogCoalescesBoxes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const pods = 8
		got, decodes, synced := coalesceBoxes(t, pods)
		assert.Equal(t, []string{"add ns0/p0", "add ns0/p3 updated", "add ns0/p6", "add ns1/p1", "add ns1/p7", "add ns2/p2", "add ns2/p5"}, got)
		assert.Equal(t, int64(pods-2), decodes)
		assert.True(t, synced, "registration synced")
	})
}

// coalesceBoxes distributes pods boxed initial adds to a listener with a
// backlog of 2 stuck in its first call, then an update of p3 and a delete
// of p4, and returns what the handler was told, the decodes and whether
// its registration synced.
func coalesceBoxes(t *testing.T, pods int) ([]string, int64, bool) {
	_, views, _, list := preheldStore(t, pods)
	p := fanout.NewProcessor(fanout.Config{KeyFunc: DeletionHandlingMetaNamespaceKeyFunc, BacklogLimit: 2})
	release := make(chan struct{})
	var got []string
	h := ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			pod := obj.(*v1.Pod)
			got = append(got, "add "+pod.Namespace+"/"+pod.Name+pod.Labels["note"])
			if len(got) == 1 {
				<-release
			}
		},
		UpdateFunc: func(_, obj any) { got = append(got, "update "+obj.(*v1.Pod).Name) },
		DeleteFunc: func(obj any) { got = append(got, fmt.Sprintf("delete %T", obj)) },
	}
	l := p.NewListener(fanout.ListenerOptions{Logger: klog.Background(), Handler: h, Name: "test", InformerChecker: "test",
		Metrics: listenerMetrics(nil, InformerNameAndResource{}, "test")})
	p.AddListener(l, nil)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); p.Run(stop) }()
	ns := make([]fanout.Notification, len(list))
	for i, obj := range list {
		ns[i] = fanout.Notification{Kind: fanout.Add, New: obj, Initial: true}
	}
	p.Notify(ns[:1])
	synctest.Wait() // the handler is in its first add
	p.Notify(ns[1:])
	old := list[3].(store.Preheld)
	oldObj, _ := old.View(false)
	newObj := oldObj.(*v1.Pod).DeepCopy()
	newObj.Labels["note"] = " updated"
	p.Notify([]fanout.Notification{{Kind: fanout.Update, Old: oldObj, New: newObj}})
	gone, _ := list[4].(store.Preheld).View(false)
	p.Notify([]fanout.Notification{{Kind: fanout.Delete, Old: gone}})
	p.MarkSynced()
	decodesBeforeRelease := views.kept.Load()
	close(release)
	synctest.Wait()
	synced := l.HasSynced()
	close(stop)
	<-done
	assert.Equal(t, int64(1), decodesBeforeRelease, "only the add the handler is in was read back")
	return got, views.kept.Load(), synced
}
