package cache

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/form"
)

// selectForms are the stores a lister may read: the default, compact
// storage with and without a hot cache, and a form that never knows
// labels apart (every selecting read views each object).
func selectForms() map[string]func() Indexer {
	idx := func(opts ...StoreOption) func() Indexer {
		return func() Indexer {
			return NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, opts...)
		}
	}
	return map[string]func() Indexer{
		"default":      idx(),
		"compact-cold": idx(withStoredForm(form.NewCompact(-1))),
		"compact-hot":  idx(withStoredForm(form.NewCompact(8))),
		"boxed":        idx(withStoredForm(newBoxForm())),
	}
}

var listerSelectors = []string{"", "app=a", "app!=a", "app in (a,b)", "app notin (a)", "!app", "tier", "app=a,tier=x", "tier=y,app in (b)"}

// listerKeys lists through ours or client-go's ListAll/ListAllByNamespace
// and returns the keys listed, sorted (stores list in their own order).
func listerKeys(t *testing.T, list func(AppendFunc) error) []string {
	t.Helper()
	var keys []string
	require.NoError(t, list(func(obj any) {
		key, err := MetaNamespaceKeyFunc(obj)
		require.NoError(t, err)
		keys = append(keys, key)
	}))
	sort.Strings(keys)
	return keys
}

// randomPodWrite applies one random write to both stores.
func randomPodWrite(t *testing.T, rng *rand.Rand, ours Indexer, theirs clientcache.Indexer) {
	t.Helper()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprint("ns", rng.IntN(3)), Name: fmt.Sprint("p", rng.IntN(40))}}
	if lbls := map[string]string{}; rng.IntN(5) > 0 {
		for _, k := range []string{"app", "tier"} {
			if rng.IntN(3) > 0 {
				lbls[k] = []string{"a", "b", "x", "y"}[rng.IntN(4)]
			}
		}
		pod.Labels = lbls
	}
	if rng.IntN(4) == 0 {
		require.NoError(t, ours.Delete(pod))
		require.NoError(t, theirs.Delete(pod))
		return
	}
	require.NoError(t, ours.Update(pod))
	require.NoError(t, theirs.Update(pod))
}

// Listers select what client-go's select, in every storage form, as the
// objects and their labels change.
func TestListersSelectAsClientGo(t *testing.T) {
	for name, newIndexer := range selectForms() {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(41, 1))
			ours := newIndexer()
			theirs := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
			for round := range 30 {
				for range 20 {
					randomPodWrite(t, rng, ours, theirs)
				}
				for _, s := range listerSelectors {
					sel, err := labels.Parse(s)
					require.NoError(t, err)
					want := listerKeys(t, func(fn AppendFunc) error { return clientcache.ListAll(theirs, sel, fn) })
					assert.Equal(t, want, listerKeys(t, func(fn AppendFunc) error { return ListAll(ours, sel, fn) }), "round %d ListAll %q", round, s)
					for _, ns := range []string{"", "ns0", "ns2", "none"} {
						want := listerKeys(t, func(fn AppendFunc) error { return clientcache.ListAllByNamespace(theirs, ns, sel, fn) })
						got := listerKeys(t, func(fn AppendFunc) error { return ListAllByNamespace(ours, ns, sel, fn) })
						assert.Equal(t, want, got, "round %d ListAllByNamespace(%q, %q)", round, ns, s)
					}
				}
			}
		})
	}
}

// Without the namespace index a lister scans, as client-go's does.
func TestListersSelectWithoutNamespaceIndex(t *testing.T) {
	ours := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{}, CompactOptions{HotObjects: -1})
	theirs := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{})
	rng := rand.New(rand.NewPCG(7, 7))
	for range 100 {
		randomPodWrite(t, rng, ours, theirs)
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "a"})
	want := listerKeys(t, func(fn AppendFunc) error { return clientcache.ListAllByNamespace(theirs, "ns1", sel, fn) })
	assert.Equal(t, want, listerKeys(t, func(fn AppendFunc) error { return ListAllByNamespace(ours, "ns1", sel, fn) }))
}

// A store holding an object without metadata fails a selecting list with
// the accessor's error, as client-go's does; an empty selector reads no
// metadata and lists it.
func TestListersSelectObjectWithoutMeta(t *testing.T) {
	keyFunc := func(obj any) (string, error) {
		if s, ok := obj.(string); ok {
			return s, nil
		}
		return MetaNamespaceKeyFunc(obj)
	}
	ours := NewIndexer(keyFunc, Indexers{})
	theirs := clientcache.NewIndexer(keyFunc, clientcache.Indexers{})
	for _, obj := range []any{"not-an-object", &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": "a"}}}} {
		require.NoError(t, ours.Add(obj))
		require.NoError(t, theirs.Add(obj))
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "a"})
	wantErr := clientcache.ListAll(theirs, sel, func(any) {})
	require.Error(t, wantErr)
	assert.EqualError(t, ListAll(ours, sel, func(any) {}), wantErr.Error())
	n := 0
	require.NoError(t, ListAll(ours, labels.Everything(), func(any) { n++ }))
	assert.Equal(t, 2, n)
}
