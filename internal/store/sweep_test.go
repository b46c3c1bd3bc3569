package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/fixtures"
	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/snapshot"
)

// coldStore is a compact store with a cold tier (no hot cache) of n
// realistic pods, its dictionary made from the first 8 offered.
func coldStore(t *testing.T, n int) (*Map, *form.Compact, *countingForm, []*v1.Pod) {
	t.Helper()
	f := form.NewColdCompact(-1, form.Cold{Samples: 8})
	views := &countingForm{Form: f}
	m := New(clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc},
		Config{Form: views, IsNamespaceIndex: isNamespaceIndex})
	pods := fixtures.Pods(1, n)
	for _, pod := range pods {
		m.Add(pod.Namespace+"/"+pod.Name, pod)
	}
	return m, f, views, pods
}

// heldBytes is the size of every encoding m holds.
func heldBytes(m *Map) (n int) {
	m.freezeItems().Range(func(_ string, held any) bool {
		n += held.(compact.Encoding).Len()
		return true
	})
	return n
}

// Objects go cold after a whole sweep period untouched, read back equal,
// keep their labels known, and come back plain after a read.
func TestSweepCoolsUntouchedAndWarmsRead(t *testing.T) {
	ctx := context.Background()
	m, f, views, pods := coldStore(t, 200)
	plain := heldBytes(m)

	assert.Zero(t, m.Sweep(ctx), "every object was just written")
	moved := m.Sweep(ctx)
	assert.Equal(t, 200-8, moved, "all but the dictionary's samples")
	assert.Equal(t, 8, m.Sweep(ctx), "then the samples")
	assert.Zero(t, m.Sweep(ctx))
	cold := heldBytes(m)
	assert.Equal(t, form.ColdCounts{Cooled: 200, CooledFromBytes: uint64(plain), CooledToBytes: uint64(cold)}, f.ColdCounts(),
		"the bytes cooled are the plain encodings' and the cold ones'")
	t.Logf("held bytes: plain %d, cold %d (%.3fx)", plain, cold, float64(cold)/float64(plain))
	assert.Less(t, cold, plain/3)

	sel := mustSelector(t, "app="+pods[0].Labels["app"])
	before := views.views.Load()
	got, err := m.ListSelect(sel)
	require.NoError(t, err)
	require.NotEmpty(t, got)
	assert.Equal(t, int64(len(got)), views.views.Load()-before, "labels stay known: only the matches are read")
	assert.Equal(t, len(got), m.Sweep(ctx), "the objects read come back plain")
	assert.Equal(t, len(got), m.Sweep(ctx), "and go cold again a period later")

	for i, pod := range pods[:20] {
		obj, ok := m.Get(pod.Namespace + "/" + pod.Name)
		require.True(t, ok)
		require.True(t, equality.Semantic.DeepEqual(pod, obj), "pod %d", i)
	}
	assert.Equal(t, 20, m.Sweep(ctx))
	assert.Equal(t, uint64(len(got)+20), f.ColdCounts().Warmed)
	for _, obj := range m.List() {
		pod := obj.(*v1.Pod)
		require.True(t, equality.Semantic.DeepEqual(podByName(pods, pod.Name), pod))
	}
}

func podByName(pods []*v1.Pod, name string) *v1.Pod {
	for _, p := range pods {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// A write after a sweep's read of a key wins: the sweep stores nothing
// for a key whose held value changed.
func TestSweepLeavesReplacedValues(t *testing.T) {
	ctx := context.Background()
	m, _, _, pods := coldStore(t, 50)
	m.Sweep(ctx)
	m.Sweep(ctx) // samples taken, the rest cold
	key := pods[0].Namespace + "/" + pods[0].Name
	before, _ := m.items.Get(key)

	batch := []move{{key: key, held: before, next: "stale"}}
	updated := pods[0].DeepCopy()
	updated.Labels["written"] = "after"
	m.Update(key, updated)
	assert.Zero(t, m.applyMoves(batch))
	got, ok := m.Get(key)
	require.True(t, ok)
	assert.Equal(t, "after", got.(*v1.Pod).Labels["written"])
}

// A snapshot keeps cold objects compressed, with the dictionary in its
// header: a compact store loads them cold, adopting the dictionary, and a
// plain store decodes them; both read back equal.
func TestSnapshotOfColdObjects(t *testing.T) {
	ctx := context.Background()
	m, src, _, pods := coldStore(t, 40)
	for range 3 {
		m.Sweep(ctx)
	}
	loaded := form.NewCompact(-1)
	staged := snapshotRoundTrip(t, m, New(nil, Config{Form: loaded}))
	require.Len(t, staged, len(pods))
	cold := 0
	for _, pod := range pods {
		p, ok := staged[pod.Namespace+"/"+pod.Name].(Preheld)
		require.True(t, ok)
		held, _ := m.items.Get(pod.Namespace + "/" + pod.Name)
		assert.Equal(t, held.(compact.Encoding).Bytes(), p.held.(compact.Encoding).Bytes(), "loaded as it was held")
		if p.held.(compact.Encoding).Len() < heldPlainLen(t, pod)/2 {
			cold++
		}
		obj, ok := p.View(false)
		require.True(t, ok)
		require.True(t, equality.Semantic.DeepEqual(pod, obj))
	}
	assert.Greater(t, cold, len(pods)/2, "cold records stay compressed")
	assert.NotZero(t, loaded.Stats().DictionaryBytes)
	assert.Equal(t, src.Stats().DictionaryBytes, loaded.Stats().DictionaryBytes, "the dictionary adopted is counted")

	plain := snapshotRoundTrip(t, m, New(nil, Config{Form: form.Plain{}}))
	for _, pod := range pods {
		require.True(t, equality.Semantic.DeepEqual(pod, plain[pod.Namespace+"/"+pod.Name]))
	}
}

// A store whose codec made a dictionary of its own refuses a snapshot's
// cold records made with another, as a corrupt snapshot: the informer
// then syncs fresh.
func TestSnapshotOfColdObjectsWithAnotherDictionary(t *testing.T) {
	ctx := context.Background()
	m, _, _, _ := coldStore(t, 40)
	other, _, _, _ := coldStore(t, 20)
	for range 3 {
		m.Sweep(ctx)
		other.Sweep(ctx)
	}
	_, err := trySnapshotRoundTrip(t, m, other)
	require.Error(t, err)
	assert.Equal(t, snapshot.CorruptReason, snapshot.ReasonOf(err))
}

// heldPlainLen is the length of pod's plain encoding.
func heldPlainLen(t *testing.T, pod *v1.Pod) int {
	t.Helper()
	c, err := compact.NewCodec(pod, compact.Options{})
	require.NoError(t, err)
	e, err := c.Encode(pod)
	require.NoError(t, err)
	return e.Len()
}

// A store without a cold tier never moves anything.
func TestSweepWithoutColdTier(t *testing.T) {
	for _, f := range []form.Form{form.Plain{}, form.NewCompact(-1)} {
		m := New(nil, Config{Form: f})
		for _, pod := range fixtures.Pods(1, 20) {
			m.Add(pod.Namespace+"/"+pod.Name, pod)
		}
		for range 3 {
			assert.Zero(t, m.Sweep(context.Background()), "%T", f)
		}
	}
}

// BenchmarkSweepNothingMoves is a sweep of a store whose objects all stay
// where they are (cold and unused): what every period costs a large, quiet
// cache, per key.
func BenchmarkSweepNothingMoves(b *testing.B) {
	ctx := context.Background()
	f := form.NewColdCompact(-1, form.Cold{Samples: 8})
	m := New(clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc},
		Config{Form: f, IsNamespaceIndex: isNamespaceIndex})
	src := fixtures.NewPodSource(1)
	const n = 20000
	for i := range n {
		pod := src.Pod(i)
		m.Add(pod.Namespace+"/"+pod.Name, pod)
	}
	for m.Sweep(ctx) > 0 || f.Stats().ColdObjects == 0 {
		f.SweepEnded(ctx, 0)
	}
	b.ResetTimer()
	for b.Loop() {
		if m.Sweep(ctx) != 0 {
			b.Fatal("an object moved")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/key")
}
