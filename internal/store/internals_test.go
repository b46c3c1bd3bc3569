package store

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/form"
)

// The store's private state, checked where it lives. The root's tests
// check the same stores through client-go's interfaces.

// isNamespaceIndex recognises client-go's MetaNamespaceIndexFunc, as the
// root's stores do theirs and client-go's.
func isNamespaceIndex(fn clientcache.IndexFunc) bool {
	return reflect.ValueOf(fn).Pointer() == reflect.ValueOf(clientcache.MetaNamespaceIndexFunc).Pointer()
}

func testPod(ns, name, node string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}, Spec: v1.PodSpec{NodeName: node}}
}

func podNode(obj any) ([]string, error) { return []string{obj.(*v1.Pod).Spec.NodeName}, nil }

// Preheld objects whose only index values are their key's namespace share
// one heldIndex; a key without the namespace, or values in another index,
// get their own.
func TestPreheldSharesOneHeldIndex(t *testing.T) {
	nsIndex := clientcache.Indexers{"namespace": clientcache.MetaNamespaceIndexFunc}
	for _, tc := range []struct {
		name     string
		ns       string
		key      func(ns, name string) string
		indexers clientcache.Indexers
		shared   bool
	}{
		{name: "namespace key, namespace index", ns: "ns1", key: joinKey, indexers: nsIndex, shared: true},
		{name: "cluster-scoped key", ns: "", key: joinKey, indexers: nsIndex, shared: true},
		{name: "key without the namespace", ns: "ns1", key: func(_, name string) string { return "k-" + name }, indexers: nsIndex},
		{name: "another index's values", ns: "ns1", key: joinKey,
			indexers: clientcache.Indexers{"namespace": clientcache.MetaNamespaceIndexFunc, "node": podNode}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(tc.indexers, Config{Form: form.NewCompact(-1), IsNamespaceIndex: isNamespaceIndex})
			a, err := m.Prehold(tc.key(tc.ns, "a"), testPod(tc.ns, "a", "n1"))
			require.NoError(t, err)
			b, err := m.Prehold(tc.key(tc.ns, "b"), testPod(tc.ns, "b", "n2"))
			require.NoError(t, err)
			assert.Equal(t, tc.shared, a.index == b.index, "one heldIndex for both")
		})
	}
}

// A new indexer set gets its own shared heldIndex: values held before
// AddIndexers are not taken for the new set's.
func TestPreheldSharedIndexFollowsIndexerSet(t *testing.T) {
	m := New(clientcache.Indexers{"namespace": clientcache.MetaNamespaceIndexFunc}, Config{Form: form.NewCompact(-1), IsNamespaceIndex: isNamespaceIndex})
	before, err := m.Prehold("ns/a", testPod("ns", "a", ""))
	require.NoError(t, err)
	require.NoError(t, m.AddIndexers(clientcache.Indexers{"ns2": clientcache.MetaNamespaceIndexFunc}))
	after, err := m.Prehold("ns/b", testPod("ns", "b", ""))
	require.NoError(t, err)
	assert.NotSame(t, before.index, after.index)
	assert.Same(t, m.IndexerSet(), after.IndexSet())
}

// A prior read by key, or by a key joined on the stack, is the stored
// object itself, known; an absent key's is empty.
func TestPriorIsTheStoredObject(t *testing.T) {
	m := New(nil, Config{})
	stored := testPod("ns", "a", "")
	m.Add("ns/a", stored)
	for name, read := range map[string]func(string) Prior{
		"ReadPrior":       m.ReadPrior,
		"ReadStoredPrior": func(key string) Prior { _, p := m.ReadStoredPrior(key); return p },
	} {
		p := read("ns/a")
		assert.True(t, p.Existed() && p.known, name)
		assert.Same(t, stored, p.obj, name)
		p = read("ns/gone")
		assert.False(t, p.Existed() || p.known, name)
		assert.Nil(t, p.obj, name)
	}
}

// An index function the root recognises as MetaNamespaceIndexFunc takes
// the in-place namespace path.
func TestNamespaceIndexTakesTheNamespacePath(t *testing.T) {
	m := New(clientcache.Indexers{"namespace": clientcache.MetaNamespaceIndexFunc, "node": podNode}, Config{IsNamespaceIndex: isNamespaceIndex})
	set := m.IndexerSet()
	assert.Equal(t, []bool{true, false}, []bool{set.byNamespace[set.pos["namespace"]], set.byNamespace[set.pos["node"]]})
}

func joinKey(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// A compact store's snapshot reads back as preheld objects whose
// namespace values come from the key and whose other values come from
// the record's frame.
func TestSnapshotReadsBackHeldIndexValues(t *testing.T) {
	label := func(obj any) ([]string, error) { return []string{obj.(*v1.Pod).Labels["v"]}, nil }
	m := New(clientcache.Indexers{"namespace": clientcache.MetaNamespaceIndexFunc, "label": label},
		Config{Form: form.NewCompact(-1), IsNamespaceIndex: isNamespaceIndex})
	pod := testPod("ns", "p0001", "")
	pod.Labels = map[string]string{"v": "1"}
	m.Add("ns/p0001", pod)
	staged := snapshotRoundTrip(t, m, m)
	p := staged["ns/p0001"].(Preheld)
	assert.Equal(t, "ns", p.index.namespace)
	assert.Equal(t, []string{"1"}, p.IndexValues()[p.IndexSet().pos["label"]], "the label index's values come from the frame")
}
