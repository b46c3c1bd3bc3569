package store

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openinformer/cache/internal/fixtures"
	"github.com/openinformer/cache/internal/form"
)

// budgetStore is a compact store of form f (a budget's), empty.
func budgetStore(f *form.Compact) *Map {
	return New(clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc},
		Config{Form: f, IsNamespaceIndex: isNamespaceIndex})
}

// logLines is a context whose logger keeps every line logged to it.
func logLines() (context.Context, func() []string) {
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, prefix+" "+args)
		mu.Unlock()
	}, funcr.Options{})
	return klog.NewContext(context.Background(), logger), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// requireAllEqual reads every pod back from m.
func requireAllEqual(t *testing.T, m *Map, pods []*v1.Pod) {
	t.Helper()
	for _, pod := range pods {
		got, ok := m.Get(pod.Namespace + "/" + pod.Name)
		require.True(t, ok, pod.Name)
		require.True(t, equality.Semantic.DeepEqual(pod, got), pod.Name)
	}
}

// Writes past the budget are compressed as they are held, and a sweep
// brings the whole store under it, coldest first; objects written since
// the last sweep stay plain while there is room.
func TestBudgetKeepsWritesUnder(t *testing.T) {
	ctx := context.Background()
	const budget = form.DictionaryCost + 600<<10
	f := form.NewColdCompact(-1, form.Cold{Budget: budget, OnlyOverBudget: true})
	m := budgetStore(f)
	pods := fixtures.Pods(7, 400)
	for _, pod := range pods {
		m.Add(pod.Namespace+"/"+pod.Name, pod)
	}
	s := f.Stats()
	t.Logf("after writes: %+v", s)
	assert.Positive(t, s.Cooled, "writes past the budget compressed")
	assert.Less(t, s.BudgetedBytes, int64(budget)*2, "the writes before it plain until a sweep")

	m.Sweep(ctx)
	f.SweepEnded(ctx, 0)
	s = f.Stats()
	t.Logf("after a sweep: %+v", s)
	assert.LessOrEqual(t, s.BudgetedBytes, int64(budget)-budget/8, "down to the low mark")
	assert.Positive(t, s.PlainObjects, "objects under the low mark stay plain")
	assert.False(t, s.OverBudget)
	assert.Equal(t, int64(budget), s.BudgetBytes)
	requireAllEqual(t, m, pods)

	m.Sweep(ctx)
	f.SweepEnded(ctx, 0)
	assert.LessOrEqual(t, f.Stats().BudgetedBytes, int64(budget), "reads warm only what fits")
}

// The sweep a write over the budget wakes brings the store down to the low
// mark, although the writes over the budget, compressed as they are held,
// leave the count at or just under the budget by the time it runs: a
// sweep that waited for a count over the budget would leave it there, and
// every later write would be compressed at once and wake another sweep.
func TestBudgetWokenSweepCoolsToLowMark(t *testing.T) {
	ctx := context.Background()
	const budget = form.DictionaryCost + 1<<20
	f := form.NewColdCompact(-1, form.Cold{Budget: budget, OnlyOverBudget: true})
	m := budgetStore(f)
	pods := fixtures.Pods(8, 600)
	woken := false
	for _, pod := range pods {
		if m.Add(pod.Namespace+"/"+pod.Name, pod); len(f.Wake()) > 0 {
			woken = true
			break
		}
	}
	require.True(t, woken, "a write went over the budget")
	for _, pod := range pods[:5] { // updates over the budget, compressed as they are held
		pod = pod.DeepCopy()
		pod.Status.Message = "updated"
		m.Update(pod.Namespace+"/"+pod.Name, pod)
	}
	require.LessOrEqual(t, f.Stats().BudgetedBytes, int64(budget), "the updates over it compressed themselves")
	cooledByWrites := f.Stats().Cooled

	m.Sweep(ctx)
	f.SweepEnded(ctx, 0)
	s := f.Stats()
	t.Logf("%+v", s)
	assert.Greater(t, s.Cooled, cooledByWrites, "the sweep compressed")
	assert.LessOrEqual(t, s.BudgetedBytes, int64(budget-budget/8), "down to the low mark")
}

// A budget without an age compresses nothing while there is room.
func TestBudgetUnderCompressesNothing(t *testing.T) {
	ctx := context.Background()
	f := form.NewColdCompact(-1, form.Cold{Budget: 64 << 20, OnlyOverBudget: true})
	m := budgetStore(f)
	pods := fixtures.Pods(7, 100)
	for _, pod := range pods {
		m.Add(pod.Namespace+"/"+pod.Name, pod)
	}
	for range 3 {
		assert.Zero(t, m.Sweep(ctx))
		f.SweepEnded(ctx, 0)
	}
	s := f.Stats()
	assert.Zero(t, s.Cooled)
	assert.Equal(t, 100, s.PlainObjects)
	assert.Zero(t, s.DictionaryBytes, "no dictionary needed")
}

// Objects that do not fit even compressed are all kept and read back
// equal; the form says so in its statistics and logs it once, without
// any object's contents.
func TestBudgetTooSmallReportsOnce(t *testing.T) {
	ctx, lines := logLines()
	const budget = form.DictionaryCost + 32<<10
	f := form.NewColdCompact(100, form.Cold{Budget: budget, OnlyOverBudget: true})
	m := budgetStore(f)
	pods := fixtures.Pods(9, 200)
	for _, pod := range pods {
		m.Add(pod.Namespace+"/"+pod.Name, pod)
	}
	for range 4 {
		m.Sweep(ctx)
		f.SweepEnded(ctx, 0)
	}
	s := f.Stats()
	t.Logf("%+v", s)
	assert.True(t, s.OverBudget)
	assert.Zero(t, s.HotLimit, "no room for a hot cache")
	assert.Equal(t, 200, s.ColdObjects, "every object compressed")
	requireAllEqual(t, m, pods)
	got := lines()
	require.Len(t, got, 1, "logged once")
	assert.Contains(t, got[0], "does not fit its memory budget")
	for _, pod := range pods {
		assert.NotContains(t, got[0], pod.Name)
		assert.NotContains(t, got[0], pod.Namespace)
	}

	// Once the objects fit again (most deleted), it says so.
	for _, pod := range pods[10:] {
		m.Delete(pod.Namespace + "/" + pod.Name)
	}
	m.Sweep(ctx)
	f.SweepEnded(ctx, 0)
	assert.False(t, f.Stats().OverBudget)
	assert.Len(t, lines(), 1)
}

// The hot cache shrinks to what the budget leaves it, and grows back to
// its size when the objects are gone.
func TestBudgetSizesHotCache(t *testing.T) {
	ctx := context.Background()
	const budget = form.DictionaryCost + 1<<20
	f := form.NewColdCompact(1000, form.Cold{Budget: budget, OnlyOverBudget: true})
	m := budgetStore(f)
	pods := fixtures.Pods(11, 300)
	for _, pod := range pods {
		m.Add(pod.Namespace+"/"+pod.Name, pod)
	}
	m.Sweep(ctx)
	f.SweepEnded(ctx, 0)
	s := f.Stats()
	t.Logf("%+v", s)
	assert.Less(t, s.HotLimit, 300)
	assert.LessOrEqual(t, s.BudgetedBytes, int64(budget))
	requireAllEqual(t, m, pods)

	for _, pod := range pods {
		m.Delete(pod.Namespace + "/" + pod.Name)
	}
	m.Sweep(ctx)
	f.SweepEnded(ctx, 0)
	assert.Greater(t, f.Stats().HotLimit, s.HotLimit, "the room the objects left")
	assert.Equal(t, int64(form.DictionaryCost), f.Stats().BudgetedBytes, "deletes are counted, the dictionary stays, the hot cache is empty")
}

// A list's objects, held ahead of the store, are compressed from an eighth
// of the budget: they wait out of any sweep's reach until the list is
// whole, and the informer holds the most beside its store just after.
func TestBudgetHoldsListAhead(t *testing.T) {
	const budget = form.DictionaryCost + 1<<20
	f := form.NewColdCompact(-1, form.Cold{Budget: budget, OnlyOverBudget: true})
	pods := fixtures.Pods(13, 600)
	for i, pod := range pods {
		_, err := f.HoldAhead(pod.Namespace+"/"+pod.Name, pod)
		require.NoError(t, err)
		require.LessOrEqual(t, f.Stats().BudgetedBytes, int64(budget), "after pod %d", i)
	}
	s := f.Stats()
	t.Logf("%+v", s)
	assert.Positive(t, s.DictionaryBytes)
	// The first pods fill the eighth and stay plain (a quarter left
	// about 60 of them so); every later one is compressed.
	assert.Greater(t, s.Cooled, uint64(570))
}

// SweepEvery sweeps when the form asks, no sooner than MinSweepGap after
// the last sweep, besides every period.
func TestSweepEveryWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := &wakingSweeper{wake: make(chan struct{}, 1)}
		m := budgetStore(form.NewCompact(-1))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); m.SweepEvery(ctx, clock.RealClock{}, time.Hour, sw) }()

		sw.wake <- struct{}{}
		synctest.Wait()
		assert.Zero(t, sw.ended.Load(), "not before the gap")
		time.Sleep(MinSweepGap)
		synctest.Wait()
		assert.Equal(t, int64(1), sw.ended.Load(), "woken")
		sw.wake <- struct{}{}
		time.Sleep(MinSweepGap / 2)
		synctest.Wait()
		assert.Equal(t, int64(1), sw.ended.Load(), "a gap after the last sweep")
		time.Sleep(MinSweepGap / 2)
		synctest.Wait()
		assert.Equal(t, int64(2), sw.ended.Load())
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, int64(3), sw.ended.Load(), "and every period")
		cancel()
		<-done
	})
}

// wakingSweeper is a Sweeper whose wakes the test sends.
type wakingSweeper struct {
	wake  chan struct{}
	ended atomic.Int64
}

func (w *wakingSweeper) Wake() <-chan struct{}                     { return w.wake }
func (w *wakingSweeper) SweepEnded(context.Context, time.Duration) { w.ended.Add(1) }
