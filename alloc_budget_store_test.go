package cache

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	clientcache "k8s.io/client-go/tools/cache"
)

// Allocation budgets: allocation counts are stable where times are not, so
// today's figures are held as tests that fail on a regression. Time
// figures stay in `make bench`.

// allocBudgetStore returns an indexed store holding n pods and the pods.
func allocBudgetStore(n int) (Indexer, []*v1.Pod) {
	s := NewIndexer(DeletionHandlingMetaNamespaceKeyFunc, Indexers{
		NamespaceIndex: MetaNamespaceIndexFunc,
		"app":          func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Labels["app"]}, nil },
	})
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = newTestPod("ns-"+strconv.Itoa(i%10), "pod-"+strconv.Itoa(i), "1", "app", "a"+strconv.Itoa(i%5))
		_ = s.Add(pods[i])
	}
	return s, pods
}

func TestAllocBudgetStoreUpdate(t *testing.T) {
	s, pods := allocBudgetStore(1000)
	i := 0
	same := testing.AllocsPerRun(1000, func() {
		_ = s.Update(pods[i%len(pods)])
		i++
	})
	moved := make([]*v1.Pod, len(pods))
	for j, p := range pods {
		moved[j] = newTestPod(p.Namespace, p.Name, "2", "app", "b"+strconv.Itoa(j%5))
	}
	i = 0
	changing := testing.AllocsPerRun(len(moved)-1, func() {
		_ = s.Update(moved[i%len(moved)])
		i++
	})
	t.Logf("allocations per Update: index values unchanged %.2f, changing %.2f", same, changing)
	// The key string, the "app" index function's slice and one more.
	assert.LessOrEqual(t, same, 3.0, "an update that keeps its index values")
	assert.LessOrEqual(t, changing, 3.0, "an update that moves the object in an index")
}

func TestAllocBudgetStoreAdd(t *testing.T) {
	s, _ := allocBudgetStore(0)
	pods := make([]*v1.Pod, 2001)
	for i := range pods {
		pods[i] = newTestPod("ns", "new-"+strconv.Itoa(i), "1", "app", "a"+strconv.Itoa(i%5))
	}
	i := 0
	adds := testing.AllocsPerRun(len(pods)-1, func() {
		_ = s.Add(pods[i])
		i++
	})
	t.Logf("allocations per Add of a new object: %.2f", adds)
	assert.LessOrEqual(t, adds, 2.0)
}

func TestAllocBudgetRealFIFOAddPop(t *testing.T) {
	q := NewRealFIFOWithOptions(RealFIFOOptions{KeyFunction: MetaNamespaceKeyFunc, AtomicEvents: true})
	pod := newTestPod("ns", "a", "1")
	noop := func(interface{}, bool) error { return nil }
	for range 100 {
		_ = q.Add(pod)
		_, _ = q.Pop(noop)
	}
	perOp := testing.AllocsPerRun(1000, func() {
		_ = q.Add(pod)
		_, _ = q.Pop(noop)
	})
	eight := make([]*v1.Pod, 8)
	for i := range eight {
		eight[i] = newTestPod("ns", "p"+strconv.Itoa(i), "1")
	}
	processBatch := func([]Delta, bool) error { return nil }
	batch := testing.AllocsPerRun(200, func() {
		for _, p := range eight {
			_ = q.Add(p)
		}
		for q.items.Len() > 0 {
			_ = q.PopBatch(processBatch, noop)
		}
	})
	t.Logf("allocations per RealFIFO add+pop %.2f, per 8 adds + PopBatch %.2f", perOp, batch)
	assert.LessOrEqual(t, perOp, 2.0, "a single Pop hands out its Deltas")
	assert.LessOrEqual(t, batch, 1.0, "a PopBatch of 8")
}

// TestAllocBudgetStoreBytesAgainstClientGo fills our indexed store and
// client-go's with the same pods and compares, per object, the bytes the
// fill allocated (garbage of growth included) and the heap the store keeps
// beyond the pods themselves. Issue 17 asks for at most client-go's bytes
// per Add and at most 0.9 times its overhead per object; the budgets below
// hold today's figures with a margin (allocated 0.70-0.71x, kept 0.67-0.68x: a
// slot is a key and a value, with its hash and distance in the key's length
// word, and tables are sized for their content).
func TestAllocBudgetStoreBytesAgainstClientGo(t *testing.T) {
	const n = 10000
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = newTestPod("ns-"+strconv.Itoa(i%10), "pod-"+strconv.Itoa(i), "1", "app", "a"+strconv.Itoa(i%5))
	}
	indexers := func() clientcache.Indexers {
		return clientcache.Indexers{
			NamespaceIndex: MetaNamespaceIndexFunc,
			"app":          func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Labels["app"]}, nil },
		}
	}
	fill := func(s clientcache.Indexer) (allocated, kept float64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, p := range pods {
			_ = s.Add(p)
		}
		runtime.ReadMemStats(&after)
		allocated = float64(after.TotalAlloc-before.TotalAlloc) / n
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
		runtime.KeepAlive(s)
		return allocated, kept
	}
	oursAlloc, oursKept := fill(NewIndexer(MetaNamespaceKeyFunc, indexers()))
	theirsAlloc, theirsKept := fill(clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, indexers()))
	t.Logf("bytes allocated per Add: ours %.0f, client-go %.0f (%.2fx); kept per object: ours %.0f, client-go %.0f (%.2fx)",
		oursAlloc, theirsAlloc, oursAlloc/theirsAlloc, oursKept, theirsKept, oursKept/theirsKept)
	assert.LessOrEqual(t, oursAlloc, 0.8*theirsAlloc, "bytes allocated per Add")
	assert.LessOrEqual(t, oursKept, 0.76*theirsKept, "heap kept per object")
}
