package informerbuild

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamiclister"
	"k8s.io/client-go/metadata/metadatalister"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func unstructuredWidget(ns, name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(lbls)
	return u
}

func metadataWidget(ns, name string, lbls map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
}

// compareListers checks that ours returns what client-go's returns, down
// to empty-versus-nil lists and NotFound errors.
func compareListers(t *testing.T, ours, theirs clientcache.GenericLister) {
	t.Helper()
	for _, s := range []string{"", "app=a", "app=none", "!app"} {
		sel, err := labels.Parse(s)
		require.NoError(t, err)
		want, wantErr := theirs.List(sel)
		got, gotErr := ours.List(sel)
		assert.Equal(t, wantErr, gotErr, s)
		assert.ElementsMatch(t, want, got, s)
		assert.Equal(t, want == nil, got == nil, "nil list for %q", s)
		for _, ns := range []string{"ns0", "ns1", "none"} {
			want, wantErr := theirs.ByNamespace(ns).List(sel)
			got, gotErr := ours.ByNamespace(ns).List(sel)
			assert.Equal(t, wantErr, gotErr, "%s %s", ns, s)
			assert.ElementsMatch(t, want, got, "%s %s", ns, s)
			assert.Equal(t, want == nil, got == nil, "nil list for %s %q", ns, s)
		}
	}
	for _, name := range []string{"w0", "missing"} {
		want, wantErr := theirs.ByNamespace("ns0").Get(name)
		got, gotErr := ours.ByNamespace("ns0").Get(name)
		assert.Equal(t, want, got, name)
		assert.Equal(t, wantErr, gotErr, name)
		want, wantErr = theirs.Get("ns1/" + name)
		got, gotErr = ours.Get("ns1/" + name)
		assert.Equal(t, want, got, name)
		assert.Equal(t, wantErr, gotErr, name)
	}
}

// The dynamic and metadata factories' listers answer as client-go's
// dynamiclister and metadatalister behind their shims, from our stores in
// the default and compact modes.
func TestShimListersAsClientGo(t *testing.T) {
	stores := map[string]func() cache.Indexer{
		"default": func() cache.Indexer {
			return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		},
		"compact": func() cache.Indexer {
			return cache.NewCompactIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, cache.CompactOptions{})
		},
	}
	for name, newStore := range stores {
		t.Run(name+"/dynamic", func(t *testing.T) {
			idx := newStore()
			for i := range 6 {
				require.NoError(t, idx.Add(unstructuredWidget(fmt.Sprint("ns", i%2), fmt.Sprint("w", i), map[string]string{"app": []string{"a", "b", "a"}[i%3]})))
			}
			compareListers(t, NewShimLister[*unstructured.Unstructured](idx, widgets.GroupResource()),
				dynamiclister.NewRuntimeObjectShim(dynamiclister.New(idx, widgets)))
		})
		t.Run(name+"/metadata", func(t *testing.T) {
			idx := newStore()
			for i := range 6 {
				require.NoError(t, idx.Add(metadataWidget(fmt.Sprint("ns", i%2), fmt.Sprint("w", i), map[string]string{"app": []string{"a", "b", "a"}[i%3]})))
			}
			compareListers(t, NewShimLister[*metav1.PartialObjectMetadata](idx, widgets.GroupResource()),
				metadatalister.NewRuntimeObjectShim(metadatalister.New(idx, widgets)))
		})
	}
}

// An object of another type in the cache, on which client-go's listers
// panic, is an error naming both types.
func TestShimListerWrongType(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	require.NoError(t, idx.Add(metadataWidget("ns0", "w0", nil)))
	l := NewShimLister[*unstructured.Unstructured](idx, widgets.GroupResource())
	const want = "the cache of widgets.example.com holds a *v1.PartialObjectMetadata, not a *unstructured.Unstructured"
	_, err := l.List(labels.Everything())
	assert.EqualError(t, err, want)
	_, err = l.ByNamespace("ns0").List(labels.Everything())
	assert.EqualError(t, err, want)
	_, err = l.ByNamespace("ns0").Get("w0")
	assert.EqualError(t, err, want)
	var _ runtime.Object = (*unstructured.Unstructured)(nil)
}
