package qb

import (
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
)

func run(b *testing.B, q clientcache.Queue) {
	pods := make([]interface{}, 10000)
	for i := range pods {
		pods[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-" + strconv.Itoa(i%50), Name: "pod-" + strconv.Itoa(i)}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(10000, b.N-done)
		for i := 0; i < n; i++ {
			q.Add(pods[i])
		}
		for i := 0; i < n; i++ {
			q.Pop(func(interface{}, bool) error { return nil })
		}
		done += n
	}
}

func BenchmarkOurs(b *testing.B)   { run(b, cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{})) }
func BenchmarkTheirs(b *testing.B) { run(b, clientcache.NewDeltaFIFOWithOptions(clientcache.DeltaFIFOOptions{})) }
