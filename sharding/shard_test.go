package sharding

import (
	"context"
	"flag"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
)

func TestEvenShardRangesSplitTheHashSpaceExactly(t *testing.T) {
	space := new(big.Int).Lsh(big.NewInt(1), 64)
	for _, n := range []int{1, 2, 3, 4, 7, 10, 255, 1000} {
		prevEnd := "0x0000000000000000"
		for i := 0; i < n; i++ {
			r, err := EvenRange(i, n)
			require.NoError(t, err)
			assert.Equal(t, prevEnd, r.Start, "range %d of %d starts where the previous ended", i, n)
			want := new(big.Int).Div(new(big.Int).Mul(big.NewInt(int64(i+1)), space), big.NewInt(int64(n)))
			got, ok := new(big.Int).SetString(strings.TrimPrefix(r.End, "0x"), 16)
			require.True(t, ok)
			assert.Zero(t, want.Cmp(got), "range %d of %d ends at floor((i+1)*2^64/n)", i, n)
			prevEnd = r.End
		}
		assert.Equal(t, "0x10000000000000000", prevEnd, "the last of %d ranges closes the hash space", n)
	}
	r, err := EvenRange(1, 4)
	require.NoError(t, err)
	assert.Equal(t, Range{Start: "0x4000000000000000", End: "0x8000000000000000"}, r)
}

func TestMalformedShardsAreConstructionErrors(t *testing.T) {
	lw := fake.MustNew(fake.Options{Object: &v1.Pod{}})
	for name, tc := range map[string]struct {
		shard Shard
		want  string
	}{
		"zero count":          {Shard{}, "out of range"},
		"index past count":    {Shard{Index: 4, Count: 4}, "out of range"},
		"negative index":      {Shard{Index: -1, Count: 4}, "out of range"},
		"unknown field":       {Shard{Count: 2, Field: "metadata.name"}, `unsupported shard field "metadata.name"`},
		"ranges and count":    {Shard{Count: 2, Ranges: []Range{{"0x0000000000000000", "0x10000000000000000"}}}, "not both"},
		"short hex":           {Shard{Ranges: []Range{{"0x0", "0x10000000000000000"}}}, "16-digit"},
		"upper-case hex":      {Shard{Ranges: []Range{{"0x00000000000000AB", "0x10000000000000000"}}}, "16-digit"},
		"2^64 as a start":     {Shard{Ranges: []Range{{"0x10000000000000000", "0x10000000000000000"}}}, "start"},
		"empty range":         {Shard{Ranges: []Range{{"0x8000000000000000", "0x8000000000000000"}}}, "must be less than"},
		"missing 0x on start": {Shard{Ranges: []Range{{"8000000000000000", "0x10000000000000000"}}}, "start"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewListWatch(lw, tc.shard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := NewListWatch(nil, Shard{Count: 1})
	assert.Error(t, err)
}

func TestShardSelectorIsWhatTheServerParses(t *testing.T) {
	sel, err := Shard{Index: 3, Count: 4, Field: ByNamespace}.Selector()
	require.NoError(t, err)
	assert.Equal(t, "shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')", sel.String())
	sel, err = Shard{Ranges: []Range{
		{"0x0000000000000000", "0x1000000000000000"}, {"0x8000000000000000", "0x9000000000000000"},
	}}.Selector()
	require.NoError(t, err)
	assert.Equal(t, "shardRange(object.metadata.uid, '0x0000000000000000', '0x1000000000000000') || "+
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x9000000000000000')", sel.String())
}

// shardTestServer serves n pods in a few namespaces.
func shardTestServer(t *testing.T, n int, support fake.ShardSelectorSupport, watchListUnsupported bool) *fake.Server {
	t.Helper()
	var objs []runtime.Object
	for i := 0; i < n; i++ {
		objs = append(objs, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", i%5), Name: fmt.Sprintf("p%03d", i)}})
	}
	return fake.MustNew(fake.Options{Object: &v1.Pod{}, Objects: objs, ShardSelectors: support, WatchListUnsupported: watchListUnsupported})
}

// shardTestReplica is one sharded informer and what its handler saw.
type shardTestReplica struct {
	lw   *ListWatch
	inf  clientcache.SharedIndexInformer
	mu   sync.Mutex
	seen map[string][]string // key -> handler calls, "add@rv" etc.
}

func (r *shardTestReplica) record(kind string, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p := obj.(*v1.Pod)
	r.mu.Lock()
	defer r.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	r.seen[key] = append(r.seen[key], kind+"@"+p.ResourceVersion)
}

// runShardReplicas starts count sharded informers on s; the returned function stops them.
func runShardReplicas(t *testing.T, s *fake.Server, count int, newInformer fakeInformerConstructor) ([]*shardTestReplica, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	replicas := make([]*shardTestReplica, count)
	for i := range replicas {
		lw, err := NewListWatch(s, Shard{Index: i, Count: count})
		require.NoError(t, err)
		r := &shardTestReplica{lw: lw, inf: newInformer(lw, &v1.Pod{}, 0, cache.Indexers{}), seen: map[string][]string{}}
		_, err = r.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { r.record("add", obj) },
			UpdateFunc: func(_, obj any) { r.record("update", obj) },
			DeleteFunc: func(obj any) { r.record("delete", obj) },
		})
		require.NoError(t, err)
		replicas[i] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.inf.RunWithContext(ctx)
		}()
	}
	for _, r := range replicas {
		require.True(t, cache.WaitForCacheSync(ctx.Done(), r.inf.HasSynced))
	}
	return replicas, func() {
		cancel()
		wg.Wait()
	}
}

// fakeInformerConstructor is what ours and client-go's NewSharedIndexInformer share.
type fakeInformerConstructor func(clientcache.ListerWatcher, runtime.Object, time.Duration, clientcache.Indexers) clientcache.SharedIndexInformer

// partitionProblem describes how the replicas' caches differ from an exact partition of the
// server's objects, or returns "".
func partitionProblem(s *fake.Server, replicas []*shardTestReplica) string {
	want := map[string]string{}
	for _, obj := range s.Objects() {
		p := obj.(*v1.Pod)
		want[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	owners := map[string][]int{}
	for i, r := range replicas {
		for _, obj := range r.inf.GetStore().List() {
			p := obj.(*v1.Pod)
			key := p.Namespace + "/" + p.Name
			if want[key] != p.ResourceVersion {
				return fmt.Sprintf("replica %d holds %s at %s, server has %q", i, key, p.ResourceVersion, want[key])
			}
			if !r.lw.Owns(p) {
				return fmt.Sprintf("replica %d holds %s of another shard", i, key)
			}
			owners[key] = append(owners[key], i)
		}
	}
	for key := range want {
		if len(owners[key]) != 1 {
			return fmt.Sprintf("%s held by replicas %v", key, owners[key])
		}
	}
	return ""
}

func TestShardedInformersPartitionTheCollection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		support   fake.ShardSelectorSupport
		noStream  bool
		mode      Mode
		clientGo  bool
		wantShare bool // each replica reads only about its share
	}{
		{name: "server filters, watch-list", support: fake.ShardSelectorsApplied, mode: ModeServer, wantShare: true},
		{name: "server filters, list", support: fake.ShardSelectorsApplied, noStream: true, mode: ModeServer, wantShare: true},
		{name: "server ignores", support: fake.ShardSelectorsIgnored, mode: ModeClient},
		{name: "server ignores, list", support: fake.ShardSelectorsIgnored, noStream: true, mode: ModeClient},
		{name: "server rejects", support: fake.ShardSelectorsRejected, mode: ModeClient},
		{name: "client-go informer, server filters", support: fake.ShardSelectorsApplied, clientGo: true, mode: ModeServer, wantShare: true},
		{name: "client-go informer, server ignores", support: fake.ShardSelectorsIgnored, noStream: true, clientGo: true, mode: ModeClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			s := shardTestServer(t, 200, tc.support, tc.noStream)
			newInformer := fakeInformerConstructor(cache.NewSharedIndexInformer)
			if tc.clientGo {
				newInformer = clientcache.NewSharedIndexInformer
			}
			replicas, stop := runShardReplicas(t, s, 4, newInformer)
			defer stop()
			require.Equal(t, "", partitionProblem(s, replicas))
			for i, r := range replicas {
				assert.Equal(t, tc.mode, r.lw.Mode(), "replica %d", i)
				n := len(r.inf.GetStore().List())
				assert.InDelta(t, 50, n, 25, "replica %d holds about a quarter", i)
			}
			shardTestChurn(t, s)
			require.Eventually(t, func() bool { return partitionProblem(s, replicas) == "" }, 20*time.Second, time.Millisecond,
				"%s", func() string { return partitionProblem(s, replicas) })
			shardTestCheckHandlers(t, s, replicas)
			for _, r := range s.Requests() {
				if tc.support == fake.ShardSelectorsRejected {
					continue
				}
				assert.NotEmpty(t, r.Options.ShardSelector, "every %s carries the shard selector", r.Verb)
			}
		})
	}
}

// shardTestChurn creates, updates and deletes objects across all shards.
func shardTestChurn(t *testing.T, s *fake.Server) {
	t.Helper()
	for i := 0; i < 40; i++ {
		_, err := s.Create(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "new", Name: fmt.Sprintf("n%03d", i)}})
		require.NoError(t, err)
	}
	for i := 0; i < 200; i += 3 {
		obj, err := s.Get(fmt.Sprintf("ns%d", i%5), fmt.Sprintf("p%03d", i))
		require.NoError(t, err)
		p := obj.(*v1.Pod)
		p.Labels = map[string]string{"touched": "yes"}
		_, err = s.Update(p)
		require.NoError(t, err)
	}
	for i := 1; i < 200; i += 7 {
		_, err := s.Delete(fmt.Sprintf("ns%d", i%5), fmt.Sprintf("p%03d", i))
		require.NoError(t, err)
	}
}

// shardTestCheckHandlers asserts that exactly the owner was notified of each key, and that its
// last notification is the server's final state.
func shardTestCheckHandlers(t *testing.T, s *fake.Server, replicas []*shardTestReplica) {
	t.Helper()
	final := map[string]string{}
	for _, obj := range s.Objects() {
		p := obj.(*v1.Pod)
		final[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	require.Eventually(t, func() bool {
		for _, r := range replicas {
			r.mu.Lock()
			for key, calls := range r.seen {
				last := calls[len(calls)-1]
				rv, live := final[key]
				if (live && last != "add@"+rv && last != "update@"+rv) || (!live && !strings.HasPrefix(last, "delete@")) {
					r.mu.Unlock()
					return false
				}
			}
			r.mu.Unlock()
		}
		return true
	}, 20*time.Second, time.Millisecond)
	notified := map[string]int{}
	for _, r := range replicas {
		r.mu.Lock()
		for key := range r.seen {
			notified[key]++
		}
		r.mu.Unlock()
	}
	keys := make([]string, 0, len(notified))
	for key, n := range notified {
		if n != 1 {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	assert.Empty(t, keys, "keys notified on more than one replica")
}

func TestShardedListWatchFiltersWhatTheServerSends(t *testing.T) {
	s := shardTestServer(t, 100, fake.ShardSelectorsIgnored, false)
	lw, err := NewListWatch(s, Shard{Index: 0, Count: 2})
	require.NoError(t, err)
	assert.Equal(t, ModePending, lw.Mode())
	list, err := lw.List(metav1.ListOptions{})
	require.NoError(t, err)
	items := list.(*v1.PodList).Items
	require.NotEmpty(t, items)
	sel := apisharding.NewSelector(apisharding.ShardRangeRequirement{Key: ByUID, Start: "0x0000000000000000", End: "0x8000000000000000"})
	for i := range items {
		ok, err := sel.Matches(&items[i])
		require.NoError(t, err)
		assert.True(t, ok, items[i].Name)
	}
	assert.Less(t, len(items), 100)
	assert.Equal(t, ModeClient, lw.Mode())
	assert.Nil(t, list.(*v1.PodList).ShardInfo)
}

func TestShardedListWatchWatchStopsCleanly(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := shardTestServer(t, 10, fake.ShardSelectorsIgnored, false)
	lw, err := NewListWatch(s, Shard{Index: 1, Count: 3})
	require.NoError(t, err)
	w, err := lw.Watch(metav1.ListOptions{})
	require.NoError(t, err)
	// Nobody reads the events: Stop must still end the watch's goroutine.
	w.Stop()
	w.Stop()
	for range w.ResultChan() {
	}
}

func TestShardedListWatchForwardsWatchListSupport(t *testing.T) {
	for _, unsupported := range []bool{false, true} {
		s := shardTestServer(t, 1, fake.ShardSelectorsApplied, unsupported)
		lw, err := NewListWatch(s, Shard{Count: 1})
		require.NoError(t, err)
		assert.Equal(t, unsupported, lw.IsWatchListSemanticsUnSupported())
	}
}

func TestStaticShardsFromOrdinalAndFlags(t *testing.T) {
	s, err := FromOrdinal("controller-2", 3)
	require.NoError(t, err)
	assert.Equal(t, Shard{Index: 2, Count: 3}, s)
	for _, bad := range []string{"controller", "controller-x", "controller-3", "controller-"} {
		_, err := FromOrdinal(bad, 3)
		assert.Error(t, err, bad)
	}

	var fromFlags Shard
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fromFlags.BindFlags(fs)
	assert.Equal(t, Shard{Count: 1}, fromFlags, "unsharded by default")
	require.NoError(t, fs.Parse([]string{"--shard-index=1", "--shard-count=4", "--shard-field=" + ByNamespace}))
	assert.Equal(t, Shard{Index: 1, Count: 4, Field: ByNamespace}, fromFlags)
}

func TestShardCoversComparesHashSets(t *testing.T) {
	quarter := func(i int) Range { r, _ := EvenRange(i, 4); return r }
	third := func(i int) Range { r, _ := EvenRange(i, 3); return r }
	ranges := func(rs ...Range) Shard { return Shard{Ranges: rs} }
	for name, c := range map[string]struct {
		outer, inner Shard
		want         bool
	}{
		"itself":                     {ranges(third(1)), ranges(third(1)), true},
		"a range within":             {ranges(third(0)), ranges(quarter(0)), true},
		"the union shrinks":          {ranges(third(1), quarter(1)), ranges(quarter(1)), true},
		"adjacent ranges join":       {ranges(quarter(3), quarter(2)), ranges(Shard{Index: 1, Count: 2}.mustRange(t)), true},
		"index and count":            {Shard{Index: 0, Count: 1}, ranges(third(2)), true},
		"overlapping only":           {ranges(third(1)), ranges(quarter(1)), false},
		"a gap between":              {ranges(quarter(0), quarter(2)), ranges(Shard{Index: 0, Count: 2}.mustRange(t), quarter(2)), false},
		"the union grows":            {ranges(quarter(0)), ranges(quarter(0), third(0)), false},
		"another field":              {Shard{Index: 0, Count: 1}, Shard{Index: 0, Count: 1, Field: ByNamespace}, false},
		"the default field is named": {Shard{Index: 0, Count: 1, Field: ByUID}, ranges(third(0)), true},
	} {
		assert.Equal(t, c.want, c.outer.covers(c.inner), name)
	}
}

func (s Shard) mustRange(t *testing.T) Range {
	r, err := s.ranges()
	require.NoError(t, err)
	return r[0]
}
