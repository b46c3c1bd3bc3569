package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
	"github.com/openinformer/cache/internal/form"
)

// An informer with a MemoryBudget and no ColdAfter keeps what its storage
// counts under the budget through its initial sync, whichever way it
// lists, with the hot cache on; its objects read back equal, and the
// sweeper stops with it.
func TestMemoryBudgetThroughSync(t *testing.T) {
	const pods, budget = 600, form.DictionaryCost + 1<<20
	objects := fixtures.Pods(5, pods)
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, Objects: fixtures.Objects(objects)})
				var lw ListerWatcher = srv
				if stream {
					lw = newStreamingLW(srv)
				}
				inf := NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, SharedIndexInformerOptions{
					Indexers: Indexers{NamespaceIndex: MetaNamespaceIndexFunc},
					Compact:  &CompactOptions{HotObjects: DefaultHotObjects, MemoryBudget: budget},
				})
				state := informerState{inf.(*sharedIndexInformer)}
				stop := informerTestRun(inf)
				defer stop()
				synctest.Wait()
				require.True(t, inf.HasSynced())
				s := state.Storage()
				t.Logf("synced: %+v", s)
				assert.Positive(t, s.Cooled, "compressed during the sync")
				time.Sleep(time.Second) // the sweep the sync asked for
				synctest.Wait()
				s = state.Storage()
				t.Logf("swept: %+v", s)
				assert.LessOrEqual(t, s.BudgetedBytes, int64(budget))
				assert.Less(t, s.HotLimit, DefaultHotObjects, "the hot cache shrunk")
				assert.False(t, s.OverBudget)
				assert.Equal(t, int64(budget), s.BudgetBytes)
				for _, obj := range srv.Objects() {
					pod := obj.(*v1.Pod)
					got, ok, err := inf.GetIndexer().GetByKey(keyOfPod(pod))
					require.NoError(t, err)
					require.True(t, ok)
					require.True(t, equality.Semantic.DeepEqual(pod, got), pod.Name)
				}
			})
		})
	}
	goleak.VerifyNone(t)
}

// budgetIndexer is a compact Indexer with a memory budget and no age,
// and its form.
func budgetIndexer(hot int, budget int64) (*cache, *form.Compact) {
	f := form.NewColdCompact(hot, form.Cold{Samples: 4, Budget: budget, OnlyOverBudget: true})
	return newCache(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, []StoreOption{withStoredForm(f)}), f
}

// Reads and writes through a budget (one the objects fit in compressed,
// one they do not; with and without a hot cache) answer as client-go's
// store does, and the budget holds after each sweep when it can.
func TestMemoryBudgetRandomizedAgainstClientGo(t *testing.T) {
	ctx := context.Background()
	for _, budget := range []int64{form.DictionaryCost + 64<<10, form.DictionaryCost + 8<<10} {
		for _, hot := range []int{-1, 8} {
			t.Run(fmt.Sprintf("budget=%d,hot=%d", budget, hot), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(43, uint64(budget)+uint64(hot+2)))
				pool := fixtures.Pods(3, 30)
				ours, f := budgetIndexer(hot, budget)
				theirs := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
				for _, pod := range pool {
					require.NoError(t, ours.Add(pod))
					require.NoError(t, theirs.Add(pod))
				}
				for range 600 {
					coldStep(t, rng, pool, ours, theirs)
					if rng.IntN(20) == 0 {
						ours.storage.Sweep(ctx)
						f.SweepEnded(ctx, 0)
						s := f.Stats()
						require.True(t, s.OverBudget || s.BudgetedBytes <= budget, "%+v", s)
					}
				}
				counts := f.ColdCounts()
				t.Logf("%+v %+v", counts, f.Stats())
				require.NotZero(t, counts.Cooled)
				require.Zero(t, counts.Failed)
				requireSamePods(t, theirs.List(), ours.List())
			})
		}
	}
}

// A negative MemoryBudget is reported as an error, and means none.
func TestMemoryBudgetNegative(t *testing.T) {
	saved := utilruntime.ErrorHandlers
	var errs []string
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, _ string, _ ...any) {
		errs = append(errs, err.Error())
	}}
	defer func() { utilruntime.ErrorHandlers = saved }()
	_, lw := informerTestServer("a")
	inf := NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, SharedIndexInformerOptions{Compact: &CompactOptions{MemoryBudget: -1}})
	require.Len(t, errs, 1)
	assert.True(t, strings.Contains(errs[0], "MemoryBudget is negative (-1)"), errs[0])
	s := inf.(*sharedIndexInformer)
	assert.Zero(t, s.coldSweep, "no sweeper")
	assert.Zero(t, informerState{s}.Storage().BudgetBytes)
}
