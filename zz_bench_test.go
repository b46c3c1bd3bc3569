package cache

import (
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"
)

func zzPod(i, variant int) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns-" + strconv.Itoa(i%100), Name: "pod-" + strconv.Itoa(i), ResourceVersion: strconv.Itoa(i),
		Labels: map[string]string{"app": "app-" + strconv.Itoa((i+variant)%50)},
	}}
}

var zzPods = func() [2][]interface{} {
	var out [2][]interface{}
	for v := range out {
		out[v] = make([]interface{}, 100000)
		for i := range out[v] {
			out[v][i] = zzPod(i, v)
		}
	}
	return out
}()

func zzIdx() Indexers {
	return Indexers{NamespaceIndex: MetaNamespaceIndexFunc, "app": func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Labels["app"]}, nil }}
}

func zzImpl(theirs bool) Indexer {
	if theirs {
		return clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, zzIdx())
	}
	return NewIndexer(MetaNamespaceKeyFunc, zzIdx())
}

func benchZZUpdate(b *testing.B, theirs bool) {
	s := zzImpl(theirs)
	for _, p := range zzPods[0] {
		s.Add(p)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Update(zzPods[1-(i/100000)%2][i%100000])
	}
}
func BenchmarkZZUpdateOurs(b *testing.B)   { benchZZUpdate(b, false) }
func BenchmarkZZUpdateTheirs(b *testing.B) { benchZZUpdate(b, true) }

func benchZZAdd(b *testing.B, theirs bool) {
	b.ReportAllocs()
	for range b.N {
		s := zzImpl(theirs)
		for _, p := range zzPods[0] {
			s.Add(p)
		}
	}
}
func BenchmarkZZAddOurs(b *testing.B)   { benchZZAdd(b, false) }
func BenchmarkZZAddTheirs(b *testing.B) { benchZZAdd(b, true) }

func benchZZList(b *testing.B, theirs bool) {
	s := zzImpl(theirs)
	for _, p := range zzPods[0] {
		s.Add(p)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.List()
	}
}
func BenchmarkZZListOurs(b *testing.B)   { benchZZList(b, false) }
func BenchmarkZZListTheirs(b *testing.B) { benchZZList(b, true) }
