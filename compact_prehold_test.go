package cache

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openinformer/cache/internal/store"
)

// A watch-list buffer keeps one preheld per object, boxed in its items:
// 40 B is a 48 B box, against 128 B when it carried its form and index
// values itself.
func TestPreheldIsFortyBytes(t *testing.T) {
	assert.EqualValues(t, 40, unsafe.Sizeof(store.Preheld{}))
}

// Objects indexed by their key's namespace alone share one heldIndex, per
// store and indexer set; an object whose namespace the key does not tell,
// or with other values, gets its own, and either way the Replace that
// adopts them indexes them as the store would.
func TestPreheldSharesNamespaceOnlyIndex(t *testing.T) {
	pod := func(ns, name string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.PodSpec{NodeName: "node-" + name}}
	}
	byName := func(obj any) (string, error) { return "k-" + obj.(*v1.Pod).Name, nil }
	for _, tc := range []struct {
		name     string
		keyFunc  KeyFunc
		indexers Indexers
	}{
		{name: "namespace key, namespace index", keyFunc: MetaNamespaceKeyFunc, indexers: Indexers{NamespaceIndex: MetaNamespaceIndexFunc}},
		{name: "cluster-scoped key", keyFunc: MetaNamespaceKeyFunc, indexers: Indexers{NamespaceIndex: MetaNamespaceIndexFunc}},
		{name: "key without the namespace", keyFunc: byName, indexers: Indexers{NamespaceIndex: MetaNamespaceIndexFunc}},
		{name: "another index's values", keyFunc: MetaNamespaceKeyFunc, indexers: Indexers{NamespaceIndex: MetaNamespaceIndexFunc, "node": podNodeIndex}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := NewCompactIndexer(tc.keyFunc, tc.indexers, CompactOptions{HotObjects: -1})
			prehold := idx.(*cache).preholder()
			ns := "ns1"
			if tc.name == "cluster-scoped key" {
				ns = ""
			}
			a, err := prehold(pod(ns, "a"))
			require.NoError(t, err)
			b, err := prehold(pod(ns, "b"))
			require.NoError(t, err)
			// Whether a and b share one heldIndex is checked in
			// internal/store (TestPreheldSharesOneHeldIndex).

			require.NoError(t, idx.Replace([]any{a, b}, "1"))
			keys, err := idx.IndexKeys(NamespaceIndex, ns)
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{a.Key(), b.Key()}, keys)
		})
	}
}

// A new indexer set gets its own shared heldIndex: values held before
// AddIndexers are not taken for the new set's.
func TestPreheldSharedIndexFollowsIndexerSet(t *testing.T) {
	idx := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, CompactOptions{HotObjects: -1})
	prehold := idx.(*cache).preholder()
	before, err := prehold(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	require.NoError(t, err)
	require.NoError(t, idx.AddIndexers(Indexers{"ns2": MetaNamespaceIndexFunc}))
	after, err := prehold(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}})
	require.NoError(t, err)
	// A new heldIndex for the new set: internal/store's
	// TestPreheldSharedIndexFollowsIndexerSet.
	assert.Same(t, idx.(*cache).storage.IndexerSet(), after.IndexSet())
	require.NoError(t, idx.Replace([]any{before, after}, "1"))
	assertIndexesRebuilt(t, idx)
}
