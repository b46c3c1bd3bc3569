package form_test

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/store"
)

// The compact form's hot cache as a store drives it. The root package's
// compact Indexers are a store.Map in form.NewCompact(HotObjects); its
// tests (compact_test.go, compact_sync_test.go) check the same behaviour
// through client-go's interfaces, and these check what the cache holds.

func pod(name, rv, app string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, Labels: map[string]string{"app": app}}}
}

// compactMap is a store.Map in a compact form with a hot cache of hot
// objects (none when not positive), and that form.
func compactMap(indexers clientcache.Indexers, hot int) (*store.Map, *form.Compact) {
	f := form.NewCompact(hot)
	return store.New(indexers, store.Config{Form: f}), f
}

// HotObjects' zero value means no hot cache, as a negative value does.
func TestCompactHotObjectsZeroMeansNone(t *testing.T) {
	for _, hot := range []int{0, -1} {
		m, f := compactMap(nil, hot)
		m.Add("ns/a", pod("a", "1", "x"))
		_, ok := m.Get("ns/a")
		require.True(t, ok)
		assert.Nil(t, form.HotCacheOf(f), "HotObjects %d", hot)
	}
}

// The hot cache holds at most HotObjects objects: the writes' own.
func TestCompactHotCacheIsBounded(t *testing.T) {
	m, f := compactMap(nil, 4)
	hot := form.HotCacheOf(f)
	pods := make([]*v1.Pod, 10)
	added := make([]weak.Pointer[v1.Pod], len(pods))
	for i := range pods {
		pods[i] = pod(fmt.Sprint("p", i), "1", "x")
		written := pods[i].DeepCopy()
		added[i] = weak.Make(written)
		m.Add("ns/"+pods[i].Name, written)
	}
	assert.Equal(t, 4, hot.Len())
	// At most 4 of the written objects are kept alive: an evicted one
	// nobody holds is decoded again.
	runtime.GC()
	same := 0
	for i, p := range pods {
		got, ok := m.Get("ns/" + p.Name)
		require.True(t, ok)
		require.True(t, reflect.DeepEqual(p, got))
		if got == any(added[i].Value()) {
			same++
		}
	}
	assert.LessOrEqual(t, same, 4)
	m.Delete("ns/p9")
	assert.LessOrEqual(t, hot.Len(), 4)
}

// A read keeps what it decodes in the hot cache; a decode for an index
// rebuild does not.
func TestCompactHotCacheKeepsReadsNotRebuilds(t *testing.T) {
	m, f := compactMap(nil, 4)
	hot := form.HotCacheOf(f)
	m.Add("ns/a", pod("a", "1", "x"))
	hot.Delete("ns/a")
	require.NoError(t, m.AddIndexers(clientcache.Indexers{"app": func(obj any) ([]string, error) {
		return []string{obj.(*v1.Pod).Labels["app"]}, nil
	}}))
	keys, err := m.IndexKeys("app", "x")
	require.NoError(t, err)
	require.Equal(t, []string{"ns/a"}, keys)
	assert.Zero(t, hot.Len(), "the rebuild decoded ns/a and kept nothing")
	_, ok := m.Get("ns/a")
	require.True(t, ok)
	assert.Equal(t, 1, hot.Len(), "the read kept what it decoded")
}

// A watch-list's objects, held ahead of the Replace, stay out of the hot
// cache, through the Replace that adopts them; a write still puts its
// object there.
func TestCompactPreholdLeavesHotCacheAlone(t *testing.T) {
	m, f := compactMap(nil, 4)
	hot := form.HotCacheOf(f)
	var list []any
	for i := range 10 {
		p, err := m.Prehold(fmt.Sprint("ns/p", i), pod(fmt.Sprint("p", i), "1", "x"))
		require.NoError(t, err)
		list = append(list, p)
	}
	assert.Zero(t, hot.Len(), "held ahead")
	prepare := func(obj any) (string, any, error) {
		key, err := clientcache.MetaNamespaceKeyFunc(obj)
		return key, obj, err
	}
	r, dropped := m.ReplaceList(list, "1", prepare, true)
	require.Empty(t, dropped)
	assert.Zero(t, hot.Len(), "adopted by the Replace")
	assert.Equal(t, 10, r.Len())
	assert.Len(t, m.ListKeys(), 10)
	m.Update("ns/p0", pod("p0", "2", "x"))
	assert.Equal(t, 1, hot.Len(), "a write's object")
}

// An update's old object is read once, by its write: an informer reads it
// before the write holds the new object (its lookup: the prior goes into
// the batch), a store's own Update after. Either way the old object comes
// from the hot cache, which then keeps only the new version: a budget
// counts one decoded object per hot key.
func TestCompactUpdateLeavesOneVersionHot(t *testing.T) {
	for _, priorFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("priorFirst=%v", priorFirst), func(t *testing.T) {
			m, f := compactMap(nil, 4)
			written := pod("a", "1", "x")
			old := weak.Make(written)
			m.Add("ns/a", written)
			written = nil
			if priorFirst {
				b := store.GetBatch(1)
				b.Add("ns/a", clientcache.TransactionTypeUpdate, pod("a", "2", "x"), m.ReadPrior("ns/a"), nil)
				m.Apply(b)
				b.Release()
			} else {
				m.Update("ns/a", pod("a", "2", "x"))
			}
			assert.Zero(t, f.Stats().PlainDecodes, "the old object came from the hot cache")
			runtime.GC()
			assert.Nil(t, old.Value(), "the hot cache let the old object go")
			got, ok := m.Get("ns/a")
			require.True(t, ok)
			assert.Equal(t, "2", got.(*v1.Pod).ResourceVersion)
			assert.Zero(t, f.Stats().PlainDecodes, "the new object is hot")
		})
	}
}

// A box's object, an initial list's, goes into the hot cache, unless the
// form holds its memory to a budget: then the room the budget counts for
// the hot cache stays free while the initial lists are in flight.
func TestBoxedReadsKeptOnlyWithoutBudget(t *testing.T) {
	for _, budget := range []int64{0, 64 << 20} {
		t.Run(fmt.Sprintf("budget %d", budget), func(t *testing.T) {
			f := form.NewForOptions(10, 0, budget)
			held, err := f.HoldAhead("ns/a", pod("a", "1", "x")) // as a watch-list holds its objects
			require.NoError(t, err)
			var b form.Box
			b.Fill("ns/a", held, f)
			_, ok := b.Object()
			require.True(t, ok)
			before := f.Stats().HotReads
			_, err = f.View("ns/a", held, false)
			require.NoError(t, err)
			assert.Equal(t, budget == 0, f.Stats().HotReads > before, "the box's object in the hot cache")
		})
	}
}
