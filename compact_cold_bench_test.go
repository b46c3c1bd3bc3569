package cache

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/openinformer/cache/internal/fixtures"
	"github.com/openinformer/cache/internal/form"
)

// BenchmarkColdGetByKey reads random realistic pods by key from two
// compact stores without a hot cache, one plain and one with every object
// cold, alternating read by read so that both see the same machine load,
// and reports each one's p99 and their ratio besides the mean of a pair.
func BenchmarkColdGetByKey(b *testing.B) {
	pods := fixtures.Pods(5, 10000)
	keys := make([]string, len(pods))
	stores := [2]*cache{}
	for i := range stores {
		stores[i] = newCache(MetaNamespaceKeyFunc, Indexers{}, []StoreOption{withStoredForm(form.NewColdCompact(-1, form.Cold{}))})
		for j, p := range pods {
			_ = stores[i].Add(p)
			keys[j] = keyOfPod(p)
		}
	}
	for range 3 {
		stores[1].storage.Sweep(context.Background())
	}
	took := [2][]time.Duration{make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		key := keys[i*7919%len(keys)]
		for s, c := range stores {
			start := time.Now()
			if _, ok, _ := c.GetByKey(key); !ok {
				b.Fatal("missing")
			}
			took[s] = append(took[s], time.Since(start))
		}
	}
	b.StopTimer()
	var p99 [2]float64
	for s := range took {
		slices.Sort(took[s])
		p99[s] = float64(took[s][len(took[s])*99/100])
	}
	b.ReportMetric(p99[0], "plain-p99-ns")
	b.ReportMetric(p99[1], "cold-p99-ns")
	b.ReportMetric(p99[1]/p99[0], "cold/plain-p99")
}
