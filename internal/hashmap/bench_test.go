package hashmap

import (
	"strconv"
	"testing"
)

// BenchmarkFill fills a map key by key, through every growth and split: a
// set the size of an index value's (2000 keys) and a store's items (100k),
// each key hashed once by the caller as the store does.
func BenchmarkFill(b *testing.B) {
	for _, n := range []int{2000, 100_000} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = "ns-" + strconv.Itoa(i%100) + "/pod-" + strconv.Itoa(i)
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var m Map[struct{}]
				e := NewEpoch()
				for _, k := range keys {
					m.SetHashed(e, Hash(k), k, struct{}{})
				}
			}
		})
	}
}
