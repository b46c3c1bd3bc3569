package cache

import (
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openinformer/cache/internal/objmeta"
)

// mutationTestPod returns a cluster-scoped pod with a UID, so that
// re-creations can be told apart from updates.
func mutationTestPod(name, uid, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), ResourceVersion: rv}}
}

const mutationTestByName = "by-name"

func mutationTestIndexers() Indexers {
	return Indexers{mutationTestByName: func(obj interface{}) ([]string, error) {
		m, err := objmeta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		return []string{m.GetName()}, nil
	}}
}

// newMutationTestCache returns a cache on a fake clock over an empty indexer
// that serves both as backing store and as index.
func newMutationTestCache(t *testing.T, opts MutationCacheOptions) (*mutationCache, Indexer, *clocktesting.FakePassiveClock) {
	t.Helper()
	backing := NewIndexer(MetaNamespaceKeyFunc, mutationTestIndexers())
	opts.Indexer = backing
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	return newMutationCacheWithClock(klog.Background(), backing, opts, clk), backing, clk
}

func mutationTestGet(t *testing.T, c MutationCache, key string) interface{} {
	t.Helper()
	obj, exists, err := c.GetByKey(key)
	require.NoError(t, err)
	if !exists {
		return nil
	}
	return obj
}

func TestM7_NewerLocalWriteOverlaysBacking(t *testing.T) {
	c, backing, _ := newMutationTestCache(t, MutationCacheOptions{})
	v1pod, v2pod, v3pod := mutationTestPod("p", "u", "1"), mutationTestPod("p", "u", "2"), mutationTestPod("p", "u", "3")
	require.NoError(t, backing.Add(v1pod))

	c.Mutation(v2pod)
	assert.Same(t, v2pod, mutationTestGet(t, c, "p"), "the local write is newer")

	require.NoError(t, backing.Update(v3pod))
	assert.Same(t, v3pod, mutationTestGet(t, c, "p"), "the backing copy caught up")
	_, remembered := c.recent.Get("p")
	assert.False(t, remembered, "a local write the backing cache caught up with is forgotten")

	c.Mutation(v2pod)
	assert.Same(t, v3pod, mutationTestGet(t, c, "p"), "an older local write never hides a newer backing copy")
}

func TestM7_OlderMutationDoesNotReplaceNewerOne(t *testing.T) {
	c, backing, _ := newMutationTestCache(t, MutationCacheOptions{})
	require.NoError(t, backing.Add(mutationTestPod("p", "u", "1")))
	v3pod := mutationTestPod("p", "u", "3")
	c.Mutation(v3pod)
	c.Mutation(mutationTestPod("p", "u", "2"))
	assert.Same(t, v3pod, mutationTestGet(t, c, "p"))
}

func TestM7_IncludeAddsExposesUnseenObjects(t *testing.T) {
	for _, includeAdds := range []bool{false, true} {
		t.Run(fmt.Sprint("includeAdds=", includeAdds), func(t *testing.T) {
			c, _, _ := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: includeAdds})
			pod := mutationTestPod("p", "u", "1")
			c.Mutation(pod)
			obj, exists, err := c.GetByKey("p")
			require.NoError(t, err)
			assert.Equal(t, includeAdds, exists)
			if includeAdds {
				assert.Same(t, pod, obj)
			}
			items, err := c.ByIndex(mutationTestByName, "p")
			require.NoError(t, err)
			assert.Equal(t, includeAdds, len(items) == 1)
		})
	}
}

func TestM7_OnAddOrUpdateForgetsOlderWrites(t *testing.T) {
	c, _, _ := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: true})
	c.Mutation(mutationTestPod("p", "u", "2"))

	c.OnAddOrUpdate(mutationTestPod("p", "u", "1"))
	assert.NotNil(t, mutationTestGet(t, c, "p"), "an older informer copy keeps the local write")

	c.OnAddOrUpdate(mutationTestPod("p", "u", "2"))
	assert.Nil(t, mutationTestGet(t, c, "p"), "an informer copy as new as the local write replaces it")
}

func TestM7_OnDeleteRecordsTombstone(t *testing.T) {
	c, backing, _ := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: true})
	c.Mutation(mutationTestPod("p", "u1", "2"))
	c.OnDelete(mutationTestPod("p", "u1", "1"))
	assert.Nil(t, mutationTestGet(t, c, "p"), "the same object deleted: its local write is gone")
	items, err := c.ByIndex(mutationTestByName, "p")
	require.NoError(t, err)
	assert.Empty(t, items)

	c.OnDelete(mutationTestPod("p", "u1", "3"))
	c.Mutation(mutationTestPod("p", "u1", "3"))
	assert.Nil(t, mutationTestGet(t, c, "p"), "a write as old as the deletion is stale")
	c.Mutation(mutationTestPod("p", "u1", "4"))
	assert.Nil(t, mutationTestGet(t, c, "p"), "a late write of the deleted object is stale")

	// The backing copy is older than the deletion: report it absent (client-go
	// returns its internal tombstone value here).
	require.NoError(t, backing.Add(mutationTestPod("p", "u1", "1")))
	obj, exists, err := c.GetByKey("p")
	require.NoError(t, err)
	assert.False(t, exists)
	assert.Nil(t, obj)
	items, err = c.ByIndex(mutationTestByName, "p")
	require.NoError(t, err)
	assert.Empty(t, items)
	require.NoError(t, backing.Delete(mutationTestPod("p", "", "")))

	recreated := mutationTestPod("p", "u2", "4")
	c.Mutation(recreated)
	assert.Same(t, recreated, mutationTestGet(t, c, "p"), "a re-created object replaces the tombstone")
}

func TestM7_OnDeleteKeepsNewerWriteOfRecreatedObject(t *testing.T) {
	c, _, _ := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: true})
	recreated := mutationTestPod("p", "u2", "5")
	c.Mutation(recreated)
	c.OnDelete(mutationTestPod("p", "u1", "3"))
	assert.Same(t, recreated, mutationTestGet(t, c, "p"))
}

func TestM7_ByIndexWithoutIndexer(t *testing.T) {
	c := NewIntegerResourceVersionMutationCache(klog.Background(), NewStore(MetaNamespaceKeyFunc), nil, time.Minute, true)
	_, err := c.ByIndex("any", "value")
	assert.EqualError(t, err, "no indexer has been provided to the mutation cache")
}

func TestM7_ByIndexOverlaysAndAppendsUnseenOldestFirst(t *testing.T) {
	c, backing, _ := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: true})
	require.NoError(t, backing.AddIndexers(Indexers{"all": func(interface{}) ([]string, error) { return []string{"x"}, nil }}))
	a1, a2 := mutationTestPod("a", "ua", "1"), mutationTestPod("a", "ua", "2")
	require.NoError(t, backing.Add(a1))
	c.Mutation(mutationTestPod("c", "uc", "1"))
	c.Mutation(a2)
	c.Mutation(mutationTestPod("b", "ub", "1"))

	items, err := c.ByIndex("all", "x")
	require.NoError(t, err)
	var names []string
	for _, it := range items {
		names = append(names, it.(*v1.Pod).Name+"@"+it.(*v1.Pod).ResourceVersion)
	}
	assert.Equal(t, []string{"a@2", "c@1", "b@1"}, names)

	_, err = c.ByIndex("missing", "x")
	assert.EqualError(t, err, "Index with name missing does not exist")
}

func TestM7_NonIntegerResourceVersionsDoNotPanic(t *testing.T) {
	c, backing, _ := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: true})
	informerCopy := mutationTestPod("p", "u", "abc")
	require.NoError(t, backing.Add(informerCopy))
	local := mutationTestPod("p", "u", "7")
	require.NotPanics(t, func() { c.Mutation(local) })
	assert.Same(t, informerCopy, mutationTestGet(t, c, "p"), "when versions cannot be compared the informer's copy wins")

	require.NoError(t, backing.Delete(informerCopy))
	require.NotPanics(t, func() {
		c.Mutation(mutationTestPod("p", "u", "x1"))
		c.Mutation(mutationTestPod("p", "u", "x2"))
	})
	assert.Equal(t, "x2", mutationTestGet(t, c, "p").(*v1.Pod).ResourceVersion, "the newest write wins")

	require.NotPanics(t, func() { c.OnAddOrUpdate(mutationTestPod("p", "u", "y")) })
	assert.Nil(t, mutationTestGet(t, c, "p"), "the informer's event wins")

	c.Mutation(mutationTestPod("p", "u", "z"))
	require.NotPanics(t, func() { c.OnDelete(mutationTestPod("p", "u2", "1")) })
	assert.Nil(t, mutationTestGet(t, c, "p"), "the deletion wins")
}

func TestM7_KeyErrorsAreIgnored(t *testing.T) {
	c, _, _ := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: true})
	require.NotPanics(t, func() {
		c.Mutation("not an object")
		c.Mutation(nil)
		c.OnAddOrUpdate(nil)
		c.OnDelete(nil)
	})
	assert.Empty(t, c.recent.KeysOldestFirst())
}

func TestM7_DefaultTTLAndSize(t *testing.T) {
	c, _, clk := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: true})
	c.Mutation(mutationTestPod("p", "u", "1"))
	clk.SetTime(clk.Now().Add(5 * time.Minute))
	assert.NotNil(t, mutationTestGet(t, c, "p"), "alive for exactly the TTL")
	clk.SetTime(clk.Now().Add(time.Nanosecond))
	assert.Nil(t, mutationTestGet(t, c, "p"), "expired after 5 minutes")

	for i := 0; i <= 100; i++ {
		c.Mutation(mutationTestPod("p"+strconv.Itoa(i), "u", "1"))
	}
	assert.Nil(t, mutationTestGet(t, c, "p0"), "the 101st write evicts the least recently used")
	assert.NotNil(t, mutationTestGet(t, c, "p1"))
	assert.NotNil(t, mutationTestGet(t, c, "p100"))
}

func TestM7_OptionsTTLAndSize(t *testing.T) {
	c, _, clk := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: true, TTL: time.Second, MaxCacheSize: 2})
	c.Mutation(mutationTestPod("a", "u", "1"))
	c.Mutation(mutationTestPod("b", "u", "1"))
	assert.NotNil(t, mutationTestGet(t, c, "a"), "reading a marks it recently used")
	c.Mutation(mutationTestPod("c", "u", "1"))
	assert.Nil(t, mutationTestGet(t, c, "b"), "b was least recently used")
	assert.NotNil(t, mutationTestGet(t, c, "a"))
	clk.SetTime(clk.Now().Add(time.Second + 1))
	assert.Nil(t, mutationTestGet(t, c, "a"))
	assert.Nil(t, mutationTestGet(t, c, "c"))

	// A negative size means the default, not a panic: the cache keeps
	// exactly defaultMutationCacheSize entries, the oldest evicted first.
	neg, _, _ := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: true, MaxCacheSize: -1})
	for i := 0; i <= defaultMutationCacheSize; i++ {
		neg.Mutation(mutationTestPod("n"+strconv.Itoa(i), "u", "1"))
	}
	assert.Len(t, neg.recent.KeysOldestFirst(), defaultMutationCacheSize, "a negative size means the default")
	assert.Nil(t, mutationTestGet(t, neg, "n0"), "one write beyond the default evicts the oldest")
	assert.NotNil(t, mutationTestGet(t, neg, "n1"))
	assert.NotNil(t, mutationTestGet(t, neg, "n"+strconv.Itoa(defaultMutationCacheSize)))
}

// TestM7_MatchesClientGo replays random informer events and local writes
// against our cache and client-go's and compares every read. Versions are
// integers, entries never expire and the cache is small enough to evict.
func TestM7_MatchesClientGo(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 50; round++ {
		oursBacking := NewIndexer(MetaNamespaceKeyFunc, mutationTestIndexers())
		theirsBacking := clientcache.NewIndexer(MetaNamespaceKeyFunc, mutationTestIndexers())
		opts := MutationCacheOptions{TTL: time.Hour, MaxCacheSize: 3, IncludeAdds: round%2 == 0}
		opts.Indexer = oursBacking
		ours := NewIntegerResourceVersionMutationCacheWithOptions(klog.Background(), oursBacking, opts)
		theirsOpts := opts
		theirsOpts.Indexer = theirsBacking
		theirs := clientcache.NewIntegerResourceVersionMutationCacheWithOptions(klog.Background(), theirsBacking, theirsOpts)

		for step := 0; step < 60; step++ {
			pod := mutationTestPod("p"+strconv.Itoa(rng.Intn(5)), "u"+strconv.Itoa(rng.Intn(2)), strconv.Itoa(rng.Intn(8)))
			op := rng.Intn(4)
			switch op {
			case 0:
				ours.Mutation(pod)
				theirs.Mutation(pod)
			case 1:
				require.NoError(t, oursBacking.Update(pod))
				require.NoError(t, theirsBacking.Update(pod))
				ours.OnAddOrUpdate(pod)
				theirs.OnAddOrUpdate(pod)
			case 2:
				require.NoError(t, oursBacking.Delete(pod))
				require.NoError(t, theirsBacking.Delete(pod))
				ours.OnDelete(pod)
				theirs.OnDelete(pod)
			case 3:
				require.NoError(t, oursBacking.Update(pod))
				require.NoError(t, theirsBacking.Update(pod))
			}
			for i := 0; i < 5; i++ {
				mutationTestCompareReads(t, ours, theirs, oursBacking, "p"+strconv.Itoa(i), opts.IncludeAdds)
			}
		}
	}
}

// mutationTestCompareReads compares ByIndex and GetByKey of one key. For an
// object only the mutation cache knows, client-go's GetByKey forgets the
// object after returning it once; the test writes it back so that both
// caches stay in the same state.
func mutationTestCompareReads(t *testing.T, ours MutationCache, theirs clientcache.MutationCache, backing Store, key string, includeAdds bool) {
	t.Helper()
	oItems, oErr := ours.ByIndex(mutationTestByName, key)
	thItems, thErr := theirs.ByIndex(mutationTestByName, key)
	require.Equal(t, thErr, oErr)
	var thKept []interface{}
	for _, it := range thItems {
		if it, ok := mutationTestWithoutClientGoTombstone(it, true); ok {
			thKept = append(thKept, it)
		}
	}
	require.Equal(t, thKept, oItems, "ByIndex %s", key)

	o, oExists, oErr := ours.GetByKey(key)
	th, thExists, thErr := theirs.GetByKey(key)
	th, thExists = mutationTestWithoutClientGoTombstone(th, thExists)
	if _, inBacking, _ := backing.GetByKey(key); includeAdds && !inBacking && thExists {
		theirs.Mutation(th)
	}
	require.Equal(t, thErr, oErr)
	require.Equal(t, thExists, oExists, "GetByKey %s", key)
	require.Equal(t, th, o, "GetByKey %s", key)
}

// mutationTestWithoutClientGoTombstone maps client-go's internal tombstone
// value, which client-go returns as if it were the object, to "absent".
func mutationTestWithoutClientGoTombstone(obj interface{}, exists bool) (interface{}, bool) {
	if exists && fmt.Sprintf("%T", obj) == "*cache.tombstone" {
		return nil, false
	}
	return obj, exists
}

// TestM7_UnseenObjectSurvivesReads: client-go forgets an object only the
// mutation cache knows as soon as GetByKey has returned it once.
func TestM7_UnseenObjectSurvivesReads(t *testing.T) {
	c, _, _ := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: true})
	pod := mutationTestPod("p", "u", "3")
	c.Mutation(pod)
	assert.Same(t, pod, mutationTestGet(t, c, "p"))
	assert.Same(t, pod, mutationTestGet(t, c, "p"), "still there on the second read")
}

func TestM7_ConcurrentUseIsSafe(t *testing.T) {
	c, backing, _ := newMutationTestCache(t, MutationCacheOptions{IncludeAdds: true, MaxCacheSize: 8})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				pod := mutationTestPod("p"+strconv.Itoa(i%10), "u", strconv.Itoa(i))
				switch (i + w) % 4 {
				case 0:
					c.Mutation(pod)
				case 1:
					_ = backing.Update(pod)
					c.OnAddOrUpdate(pod)
				case 2:
					_, _, _ = c.GetByKey(pod.Name)
				case 3:
					_, _ = c.ByIndex(mutationTestByName, pod.Name)
				}
			}
		}(w)
	}
	wg.Wait()
	assert.LessOrEqual(t, len(c.recent.KeysOldestFirst()), 8)
}
