package cache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/store"
)

// viewCounter wraps a store's form and counts its reads back: those that
// keep the object (the handlers' initial adds, reads) apart from those that
// do not (index builds, old objects). With the hot cache off each is a
// decode.
type viewCounter struct {
	form.Form
	kept, other atomic.Int64
}

// countViews makes inf's store read through a viewCounter; call before Run.
func countViews(inf SharedIndexInformer) *viewCounter {
	c := &viewCounter{}
	wrapInformerForm(inf, func(inner form.Form) form.Form {
		c.Form = inner
		return c
	})
	return c
}

func (c *viewCounter) View(key string, held any, keep bool) (any, error) {
	if keep {
		c.kept.Add(1)
	} else {
		c.other.Add(1)
	}
	return c.Form.View(key, held, keep)
}

// syncCompactInformer runs a compact informer over lw, indexed by
// namespace, with one handler, until the handler has every object of the
// initial sync, and stops it. It returns the store's reads back and
// the store.
func syncCompactInformer(t testing.TB, lw ListerWatcher, opts CompactOptions, indexers Indexers) (*viewCounter, Indexer) {
	inf := NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, SharedIndexInformerOptions{Indexers: indexers, Compact: &opts})
	views := countViews(inf)
	var adds atomic.Int64
	reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(any) { adds.Add(1) }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced))
	require.Equal(t, int64(len(inf.GetStore().ListKeys())), adds.Load(), "every object reaches the handler")
	return views, inf.GetIndexer()
}

// A compact informer's watch-list sync decodes each object once at most:
// for its handlers. Its index values were computed as it arrived, decoded,
// so the store's Replace adopts them and decodes nothing.
func TestCompactWatchListDecodesOncePerObject(t *testing.T) {
	defer goleak.VerifyNone(t)
	const pods = 200
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, Objects: fixtures.Objects(fixtures.Pods(3, pods))})
	indexers := Indexers{NamespaceIndex: MetaNamespaceIndexFunc, "node": podNodeIndex}
	views, idx := syncCompactInformer(t, newStreamingLW(srv), CompactOptions{HotObjects: -1}, indexers)
	assert.Zero(t, views.other.Load(), "decodes for the indexes")
	assert.Equal(t, int64(pods), views.kept.Load(), "decodes for the handlers")
	assertIndexesRebuilt(t, idx)
}

// podNodeIndex indexes pods by node, a function without a fast path.
func podNodeIndex(obj any) ([]string, error) {
	return []string{obj.(*v1.Pod).Spec.NodeName}, nil
}

// preheldStore is a compact indexer (hot cache off, so that every read
// back is a decode) counting its reads back and its object errors, with
// the preheld form of pods: three of four labelled app=a or app=b, the
// fourth bad=yes instead, on which the "app" index fails.
func preheldStore(t *testing.T, pods int) (Indexer, *viewCounter, *objectErrorProvider, []any) {
	flaky := &storeFlakyIndex{}
	provider := &objectErrorProvider{}
	views := &viewCounter{Form: form.NewCompact(-1)}
	idx := NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc, "app": flaky.fn},
		WithStoreMetrics(storeReservedID(t), provider), withStoredForm(views))
	prehold := idx.(*cache).preholder()
	var list []any
	for i := range pods {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", i%3), Name: fmt.Sprintf("p%d", i),
			Labels: map[string]string{"app": string(rune('a' + i%2))}}, Spec: v1.PodSpec{NodeName: fmt.Sprintf("node%d", i%5)}}
		if i%4 == 3 {
			pod.Labels = map[string]string{"bad": "yes"}
		}
		p, err := prehold(pod)
		require.NoError(t, err)
		list = append(list, p)
	}
	return idx, views, provider, list
}

// assertIndexesRebuilt checks idx's indexes against a default indexer's
// over the same objects (read back from idx).
func assertIndexesRebuilt(t *testing.T, idx Indexer) {
	t.Helper()
	want := NewIndexer(MetaNamespaceKeyFunc, idx.GetIndexers())
	for _, obj := range idx.List() {
		require.NoError(t, want.Add(obj))
	}
	for name := range idx.GetIndexers() {
		values := want.ListIndexFuncValues(name)
		assert.ElementsMatch(t, values, idx.ListIndexFuncValues(name), name)
		for _, v := range values {
			wantKeys, err := want.IndexKeys(name, v)
			require.NoError(t, err)
			keys, err := idx.IndexKeys(name, v)
			require.NoError(t, err)
			assert.ElementsMatch(t, wantKeys, keys, "%s=%s", name, v)
		}
	}
}

// A Replace of held objects adopts their index values, failures included:
// an object on which an index function failed is stored, left out of that
// index only, reported and counted, as when the store computes its values.
// Values computed for other indexers (AddIndexers since) or none at all
// are not used: the object is read back and indexed afresh.
func TestCompactReplaceAdoptsHeldIndexValues(t *testing.T) {
	const pods = 40
	for _, tc := range []struct {
		name  string
		alter func(t *testing.T, idx Indexer, list []any)
		reads int64
	}{
		{name: "values held", alter: func(*testing.T, Indexer, []any) {}},
		{name: "indexers added since", reads: pods, alter: func(t *testing.T, idx Indexer, _ []any) {
			require.NoError(t, idx.AddIndexers(Indexers{"node": podNodeIndex}))
		}},
		{name: "no values", reads: pods, alter: func(t *testing.T, idx Indexer, list []any) {
			for i, obj := range list {
				list[i] = withoutIndexValues(t, idx, obj.(store.Preheld))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reported := captureReportedErrors(t)
			idx, views, provider, list := preheldStore(t, pods)
			tc.alter(t, idx, list)
			require.NoError(t, idx.Replace(list, "7"))
			assert.Equal(t, tc.reads, views.other.Load(), "objects read back to index them")
			assert.Len(t, idx.ListKeys(), pods, "every object is stored")
			assert.Len(t, reported.take(), pods/4, "one report per bad object")
			assert.Equal(t, pods/4, provider.errors.count())
			keys, err := idx.IndexKeys("app", "b")
			require.NoError(t, err)
			assert.Len(t, keys, pods/4, "the bad objects, all odd, are left out of the failing index only")
			assertIndexesRebuilt(t, idx)
		})
	}
}

// A Replace of held objects allocates nothing per object, only per
// Replace, per index value and per table of the store's maps (one for some
// tens of entries, where they split depends on the process's hash seed): it
// neither decodes the objects (the hot cache is off) nor copies them, either
// of which costs at least one allocation per object.
func TestAllocBudgetCompactReplaceHeld(t *testing.T) {
	perReplace := func(n int) float64 {
		idx := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, CompactOptions{HotObjects: -1})
		prehold := idx.(*cache).preholder()
		var list []any
		for _, pod := range fixtures.Pods(1, n) {
			p, err := prehold(pod)
			require.NoError(t, err)
			list = append(list, p)
		}
		return testing.AllocsPerRun(10, func() { require.NoError(t, idx.Replace(list, "1")) })
	}
	small, large := perReplace(500), perReplace(1000)
	assert.LessOrEqual(t, (large-small)/500, 0.1, "allocations per object: %v for 500 objects, %v for 1000", small, large)
}

// BenchmarkCompactWatchListSync is a compact informer's watch-list initial
// sync of 5000 fixture pods, through to its handler, with the default hot
// cache; decodes/pod counts the reads back that decoded or hit the hot
// cache.
func BenchmarkCompactWatchListSync(b *testing.B) {
	const pods = 5000
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, Objects: fixtures.Objects(fixtures.Pods(1, pods))})
	lw := newStreamingLW(srv)
	indexers := Indexers{NamespaceIndex: MetaNamespaceIndexFunc}
	var views int64
	for b.Loop() {
		v, _ := syncCompactInformer(b, lw, CompactOptions{HotObjects: DefaultHotObjects}, indexers)
		views += v.kept.Load() + v.other.Load()
	}
	b.ReportMetric(float64(views)/float64(b.N)/pods, "views/pod")
}
