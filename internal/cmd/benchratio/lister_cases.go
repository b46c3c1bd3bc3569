package main

import (
	"strconv"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientcache "k8s.io/client-go/tools/cache"

	oi "github.com/openinformer/cache"
	"github.com/openinformer/cache/internal/fixtures"
)

// The lister cases are what a controller's generated lister does on every
// sync (the endpoints controller listing a service's pods): a label
// selector picking 1% of a 10k-pod namespace through ListAllByNamespace,
// ours beside client-go's, objects shared as listers return them. Our
// compact store matches labels it kept at write time and decodes only the
// matches (cold: no hot cache, so each match is a decode).

const (
	listerPods  = 10000
	listerPicks = listerPods / 100
)

// listerPodsOnce are the realistic pods of one namespace, one in 101
// labelled pick=yes, the others sharing a few label sets as a
// Deployment's pods do.
var listerPodsOnce = sync.OnceValue(func() []*v1.Pod {
	pods := fixtures.Pods(23, listerPods)
	for i, p := range pods {
		p.Namespace = "busy"
		p.Labels = map[string]string{"app": "web", "pod-template-hash": "h" + strconv.Itoa(i%4)}
		if i%101 == 0 { // 100 pods, of every Deployment
			p.Labels["pick"] = "yes"
		}
	}
	return pods
})

func listerFilled(idx clientcache.Indexer) clientcache.Indexer {
	for _, p := range listerPodsOnce() {
		if err := idx.Add(p); err != nil {
			panic(err)
		}
	}
	return idx
}

func init() {
	register(
		benchCase{Name: "lister/ListAllByNamespace-1pct-of-10k-default",
			Ours: benchListerSelect(func() clientcache.Indexer {
				return listerFilled(oi.NewIndexer(oi.MetaNamespaceKeyFunc, namespaceIndexers()))
			}, oi.ListAllByNamespace),
			Theirs: benchListerSelect(clientGoListerIndexer, clientcache.ListAllByNamespace)},
		benchCase{Name: "lister/ListAllByNamespace-1pct-of-10k-compact-cold",
			Ours: benchListerSelect(func() clientcache.Indexer {
				return listerFilled(oi.NewCompactIndexer(oi.MetaNamespaceKeyFunc, namespaceIndexers(), oi.CompactOptions{HotObjects: -1}))
			}, oi.ListAllByNamespace),
			Theirs: benchListerSelect(clientGoListerIndexer, clientcache.ListAllByNamespace)},
		benchCase{Name: "lister/ListAllByNamespace-1pct-of-10k-compact-hot",
			Ours: benchListerSelect(func() clientcache.Indexer {
				return listerFilled(oi.NewCompactIndexer(oi.MetaNamespaceKeyFunc, namespaceIndexers(), oi.CompactOptions{HotObjects: oi.DefaultHotObjects}))
			}, oi.ListAllByNamespace),
			Theirs: benchListerSelect(clientGoListerIndexer, clientcache.ListAllByNamespace)},
	)
}

func clientGoListerIndexer() clientcache.Indexer {
	return listerFilled(clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, namespaceIndexers()))
}

// benchListerSelect lists the picked pods of the namespace through list,
// as a generated lister's namespaced List does.
func benchListerSelect(newIndexer func() clientcache.Indexer, list func(clientcache.Indexer, string, labels.Selector, clientcache.AppendFunc) error) func(b *testing.B) {
	return func(b *testing.B) {
		idx := newIndexer()
		sel := labels.SelectorFromSet(labels.Set{"pick": "yes"})
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			n := 0
			if err := list(idx, "busy", sel, func(any) { n++ }); err != nil {
				b.Fatal(err)
			}
			if n != listerPicks {
				b.Fatalf("listed %d pods, want %d", n, listerPicks)
			}
		}
	}
}
