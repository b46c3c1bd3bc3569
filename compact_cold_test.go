package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/fixtures"
	"github.com/openinformer/cache/internal/form"
)

// coldIndexer is a compact Indexer with a cold tier whose dictionary is
// made from the first 4 objects a sweep offers, and its form.
func coldIndexer(hot int) (*cache, *form.Compact) {
	f := form.NewColdCompact(hot, form.Cold{Samples: 4})
	return newCache(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, []StoreOption{withStoredForm(f)}), f
}

// coldStep is one random operation on both stores: a write, a sweep or a
// read compared with client-go's answer.
func coldStep(t *testing.T, rng *rand.Rand, pool []*v1.Pod, ours *cache, theirs clientcache.Indexer) {
	t.Helper()
	pod := pool[rng.IntN(len(pool))].DeepCopy()
	switch op := rng.IntN(10); {
	case op < 3:
		pod.Labels = map[string]string{"app": []string{"a", "b"}[rng.IntN(2)], "gen": fmt.Sprint(rng.IntN(1000))}
		pod.ResourceVersion = fmt.Sprint(rng.IntN(1 << 20))
		require.NoError(t, ours.Update(pod))
		require.NoError(t, theirs.Update(pod))
	case op == 3:
		require.NoError(t, ours.Delete(pod))
		require.NoError(t, theirs.Delete(pod))
	case op < 6:
		ours.storage.Sweep(context.Background())
	case op < 8:
		want, wantOK, _ := theirs.GetByKey(keyOfPod(pod))
		got, gotOK, err := ours.GetByKey(keyOfPod(pod))
		require.NoError(t, err)
		require.Equal(t, wantOK, gotOK)
		require.True(t, equality.Semantic.DeepEqual(want, got), "GetByKey %s", keyOfPod(pod))
	default:
		sel := labels.SelectorFromSet(labels.Set{"app": []string{"a", "b"}[rng.IntN(2)]})
		var want, got []any
		require.NoError(t, clientcache.ListAllByNamespace(theirs, pod.Namespace, sel, func(o any) { want = append(want, o) }))
		require.NoError(t, ListAllByNamespace(ours, pod.Namespace, sel, func(o any) { got = append(got, o) }))
		requireSamePods(t, want, got)
		if rng.IntN(10) == 0 {
			requireSamePods(t, theirs.List(), ours.List())
		}
	}
}

func keyOfPod(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// requireSamePods compares two lists of pods in key order.
func requireSamePods(t *testing.T, want, got []any) {
	t.Helper()
	byKey := func(objs []any) []any {
		sort.Slice(objs, func(i, j int) bool { return keyOfPod(objs[i].(*v1.Pod)) < keyOfPod(objs[j].(*v1.Pod)) })
		return objs
	}
	require.Len(t, got, len(want))
	require.True(t, equality.Semantic.DeepEqual(byKey(want), byKey(got)))
}

// Reads and writes through every tier (plain, cold, and back; with and
// without a hot cache) answer as client-go's store does.
func TestColdTierRandomizedAgainstClientGo(t *testing.T) {
	for _, hot := range []int{-1, 8} {
		t.Run(fmt.Sprint("hot=", hot), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(41, uint64(hot+2)))
			pool := fixtures.Pods(3, 30)
			ours, f := coldIndexer(hot)
			theirs := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
			for _, pod := range pool {
				require.NoError(t, ours.Add(pod))
				require.NoError(t, theirs.Add(pod))
			}
			for range 600 {
				coldStep(t, rng, pool, ours, theirs)
			}
			counts := f.ColdCounts()
			t.Logf("%+v", counts)
			require.NotZero(t, counts.Cooled)
			require.NotZero(t, counts.Warmed)
			require.Zero(t, counts.Failed)
		})
	}
}

// An informer with ColdAfter sweeps in the background for as long as it
// runs: its objects go cold a few periods after sync, read back equal, and
// the sweeper stops with the informer.
func TestInformerColdTierSweeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		_, lw := informerTestServer(names...)
		inf := NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, SharedIndexInformerOptions{Compact: &CompactOptions{ColdAfter: time.Minute}})
		want := map[string]any{}
		_, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(obj any) { want[keyOfPod(obj.(*v1.Pod))] = obj.(*v1.Pod).DeepCopy() }})
		require.NoError(t, err)
		stop := informerTestRun(inf)
		synctest.Wait()
		require.True(t, inf.HasSynced())
		f := inf.(*sharedIndexInformer).indexer.form.(*form.Compact)
		// Touched by the list; sampled; the dictionary made on coming back
		// to a sampled key, the rest cooled; the last cooled.
		for range 4 {
			time.Sleep(time.Minute)
			synctest.Wait()
		}
		state := informerState{inf.(*sharedIndexInformer)}
		stats := state.Storage()
		assert.Equal(t, form.ColdCounts{Cooled: uint64(len(names)), CooledFromBytes: stats.CooledFromBytes,
			CooledToBytes: uint64(stats.ColdBytes)}, f.ColdCounts(), "every object cooled, to the bytes it holds")
		assert.Greater(t, stats.CooledFromBytes, uint64(stats.ColdBytes))
		assert.Equal(t, len(names), stats.ColdObjects, "as of the last sweep")
		assert.Zero(t, stats.PlainObjects)
		assert.Positive(t, stats.ColdBytes)
		assert.Positive(t, stats.DictionaryBytes)
		assert.Zero(t, stats.ColdDecodes)
		for key, pod := range want {
			got, ok, err := inf.GetIndexer().GetByKey(key)
			require.NoError(t, err)
			require.True(t, ok)
			assert.True(t, equality.Semantic.DeepEqual(pod, got), key)
		}
		assert.Equal(t, uint64(len(names)), state.Storage().ColdDecodes)
		stop()
	})
	goleak.VerifyNone(t)
}
