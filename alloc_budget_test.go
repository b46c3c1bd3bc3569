package cache

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/deque"
	"github.com/openinformer/cache/internal/fanout"
)

// Allocation budgets of the informer's hot paths. Allocation counts are
// stable from run to run (unlike times, which `make bench` reports), so a
// regression fails here. Counts are process-wide, so they include the
// Reflector, the queue, the processor and every handler goroutine.

// budgetLW lists n pods at RV 1, then serves the events the test sends.
type budgetLW struct {
	pods   [2][]*v1.Pod // two versions of every pod
	events chan watch.Event
}

func newBudgetLW(n int) *budgetLW {
	lw := &budgetLW{events: make(chan watch.Event, 1024)}
	for v := range lw.pods {
		lw.pods[v] = make([]*v1.Pod, n)
		for i := range n {
			lw.pods[v][i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-" + strconv.Itoa(i%100),
				Name: "pod-" + strconv.Itoa(i), ResourceVersion: strconv.Itoa(v + 2)}}
		}
	}
	return lw
}

func (lw *budgetLW) List(metav1.ListOptions) (runtime.Object, error) {
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: make([]v1.Pod, len(lw.pods[0]))}
	for i, p := range lw.pods[0] {
		list.Items[i] = *p
	}
	return list, nil
}

func (lw *budgetLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	return budgetWatch{lw.events}, nil
}

func (lw *budgetLW) IsWatchListSemanticsUnSupported() bool { return true }

type budgetWatch struct{ ch chan watch.Event }

func (budgetWatch) Stop()                            {}
func (w budgetWatch) ResultChan() <-chan watch.Event { return w.ch }

// budgetCounter counts calls and signals when a target count is reached.
type budgetCounter struct {
	n, target atomic.Int64
	done      chan struct{}
}

func (c *budgetCounter) hit() {
	if c.n.Add(1) == c.target.Load() {
		c.done <- struct{}{}
	}
}

func (c *budgetCounter) OnAdd(interface{}, bool)           { c.hit() }
func (c *budgetCounter) OnUpdate(interface{}, interface{}) { c.hit() }
func (c *budgetCounter) OnDelete(interface{})              { c.hit() }

func (c *budgetCounter) expect(n int64) { c.n.Store(0); c.target.Store(n) }
func (c *budgetCounter) wait()          { <-c.done }

func newBudgetCounter() *budgetCounter { return &budgetCounter{done: make(chan struct{}, 1)} }

// startBudgetInformer runs an informer over lw with handlers and returns
// once it has synced.
func startBudgetInformer(t *testing.T, lw *budgetLW, handlers ...*budgetCounter) (SharedIndexInformer, func()) {
	inf := NewSharedIndexInformer(lw, &v1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	for _, h := range handlers {
		h.expect(-1)
		_, err := inf.AddEventHandler(h)
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced))
	return inf, func() { cancel(); <-done }
}

// TestAllocBudgetEventsThroughFourHandlers: a watch event delivered to four
// handlers allocates nothing once the pipeline is warm (`make bench`:
// informer/events-4-handlers-after-50k-sync, 0 allocs/op).
func TestAllocBudgetEventsThroughFourHandlers(t *testing.T) {
	const n, events = 1000, 2000
	lw := newBudgetLW(n)
	hs := []*budgetCounter{newBudgetCounter(), newBudgetCounter(), newBudgetCounter(), newBudgetCounter()}
	_, stop := startBudgetInformer(t, lw, hs...)
	defer stop()
	round := 0
	run := func() {
		for _, h := range hs {
			h.expect(events)
		}
		for i := range events {
			lw.events <- watch.Event{Type: watch.Modified, Object: lw.pods[(round+1)%2][i%n]}
			if i%n == n-1 {
				round++
			}
		}
		for _, h := range hs {
			h.wait()
		}
	}
	run() // warm up: blocks, batch buffers, the queue's ring
	perRun := testing.AllocsPerRun(10, run)
	t.Logf("%v allocations per %d events", perRun, events)
	assert.LessOrEqual(t, perRun/events, 0.03, "allocations per event (%v per %d events)", perRun, events)
	stop()
	goleak.VerifyNone(t)
}

// TestAllocBudgetLateHandlerSync: a handler added to a synced informer
// gets the cache as initial adds; what that allocates is the List snapshot
// and its listener's queue blocks, nothing per object (`make bench`:
// informer/late-handler-synced-after-100k-sync, 804 allocs for 100k).
func TestAllocBudgetLateHandlerSync(t *testing.T) {
	const n = 5000
	lw := newBudgetLW(n)
	inf, stop := startBudgetInformer(t, lw)
	defer stop()
	var regs []ResourceEventHandlerRegistration
	perRun := testing.AllocsPerRun(3, func() {
		reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{})
		require.NoError(t, err)
		<-reg.HasSyncedChecker().Done()
		regs = append(regs, reg)
	})
	blocks := float64(n / deque.BlockSize)
	t.Logf("%v allocations per late-handler sync, %v queue blocks", perRun, blocks)
	assert.LessOrEqual(t, perRun, blocks+30, "allocations per late-handler sync of %d objects", n)
	for _, reg := range regs {
		require.NoError(t, inf.RemoveEventHandler(reg))
	}
	stop()
	goleak.VerifyNone(t)
}

// TestAllocBudgetCompactHotUpdate: an informer's update of a compact object
// whose old version is in the hot cache decodes nothing and allocates only
// the new encoding, which the map holds as it is: the hot cache's Get and
// Put allocate nothing (`make bench`: compact/events-4-handlers-hot-churn).
func TestAllocBudgetCompactHotUpdate(t *testing.T) {
	const n = 64
	perUpdate, encode := compactUpdateAllocs(t, n, 4*n)
	t.Logf("allocations per update %.1f: encode %.1f, the store's own %.1f", perUpdate, encode, perUpdate-encode)
	assert.LessOrEqual(t, perUpdate-encode, poolSlack, "the store's own allocations per update (none: the encoding is the held value), no decode")
}

// compactUpdateAllocs returns the allocations of an informer's update in a
// compact store with a hot cache of hot objects, cycling over two versions
// of n small pods, and those of encoding one of them.
func compactUpdateAllocs(t *testing.T, n, hot int) (perUpdate, encode float64) {
	versions := tinyPodVersions(n)
	c := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, CompactOptions{HotObjects: hot}).(*cache)
	for _, p := range versions[0] {
		require.NoError(t, c.Add(p))
	}
	var changes []fanout.Notification
	i, applied := 0, 0
	// The batch of deltas is the queue's, allocated once here: the store
	// is not charged for it.
	d := make([]Delta, 1)
	update := func() {
		d[0] = Delta{Type: Updated, Object: versions[(i/n+1)%2][i%n]}
		var err error
		if changes, _, err = c.applyDeltas(d, false, changes[:0], nil); err == nil && len(changes) == 1 {
			applied++
		}
		i++
	}
	for range 2 * n {
		update()
	}
	perUpdate = testing.AllocsPerRun(4*n, update)
	require.Equal(t, i, applied, "every update applied, with one change")
	codec, err := compact.NewCodec(versions[0][0], compact.Options{})
	require.NoError(t, err)
	encode = testing.AllocsPerRun(100, func() { _, _ = codec.Encode(versions[0][0]) })
	return perUpdate, encode
}
