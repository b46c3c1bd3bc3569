package cache

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/openinformer/cache/internal/fixtures"
	"github.com/openinformer/cache/internal/form"
)

// BenchmarkColdGetByKey reads random realistic pods by key from a compact
// store without a hot cache, plain and with every object cold, and
// reports the p99 of single reads besides the mean.
func BenchmarkColdGetByKey(b *testing.B) {
	pods := fixtures.Pods(5, 10000)
	for _, tier := range []string{"plain", "cold"} {
		b.Run(tier, func(b *testing.B) {
			f := form.NewColdCompact(-1, form.Cold{})
			c := newCache(MetaNamespaceKeyFunc, Indexers{}, []StoreOption{withStoredForm(f)})
			keys := make([]string, len(pods))
			for i, p := range pods {
				_ = c.Add(p)
				keys[i] = keyOfPod(p)
			}
			if tier == "cold" {
				for range 3 {
					c.storage.Sweep(context.Background())
				}
			}
			took := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if _, ok, _ := c.GetByKey(keys[i*7919%len(keys)]); !ok {
					b.Fatal("missing")
				}
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)*99/100]), "p99-ns")
		})
	}
}
