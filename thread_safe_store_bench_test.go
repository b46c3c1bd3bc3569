package cache

import (
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"
)

// The store's write path on its own, for profiles and A/B runs of the
// default store (benchratio compares it with client-go's).

const writeBenchSize = 100_000

func writeBenchPods(variant int) []interface{} {
	out := make([]interface{}, writeBenchSize)
	for i := range out {
		out[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace:       "ns-" + strconv.Itoa(i%100),
			Name:            "pod-" + strconv.Itoa(i),
			ResourceVersion: strconv.Itoa(i),
			Labels:          map[string]string{"app": "app-" + strconv.Itoa((i+variant)%50)},
		}}
	}
	return out
}

func writeBenchIndexers() Indexers {
	return Indexers{
		NamespaceIndex: MetaNamespaceIndexFunc,
		"app":          func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Labels["app"]}, nil },
	}
}

// BenchmarkStoreWriteAdd fills an indexed store with 100k objects per op.
func BenchmarkStoreWriteAdd(b *testing.B) {
	benchWriteAdd(b, func() clientcache.Indexer { return NewIndexer(MetaNamespaceKeyFunc, writeBenchIndexers()) })
}

// BenchmarkStoreWriteAddClientGo is BenchmarkStoreWriteAdd on client-go's
// store, for side-by-side profiles and instruction counts (valgrind).
func BenchmarkStoreWriteAddClientGo(b *testing.B) {
	benchWriteAdd(b, func() clientcache.Indexer {
		return clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, writeBenchIndexers())
	})
}

func benchWriteAdd(b *testing.B, newStore func() clientcache.Indexer) {
	pods := writeBenchPods(0)
	b.ReportAllocs()
	for b.Loop() {
		s := newStore()
		for _, p := range pods {
			if err := s.Add(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkStoreWriteUpdateIndexChanging moves one object per op to another
// "app" index value.
func BenchmarkStoreWriteUpdateIndexChanging(b *testing.B) {
	pods := [2][]interface{}{writeBenchPods(0), writeBenchPods(1)}
	s := NewIndexer(MetaNamespaceKeyFunc, writeBenchIndexers())
	for _, p := range pods[0] {
		if err := s.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := s.Update(pods[1-(i/writeBenchSize)%2][i%writeBenchSize]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkStoreList lists a 100k indexed store per op.
func BenchmarkStoreList(b *testing.B) {
	s := NewIndexer(MetaNamespaceKeyFunc, writeBenchIndexers())
	for _, p := range writeBenchPods(0) {
		if err := s.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(s.List()) != writeBenchSize {
			b.Fatal("short list")
		}
	}
}
