package compact

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SetCapacity evicts the entries beyond the new capacity, keeps the rest
// readable, keeps none at 0 and lets the cache grow back.
func TestHotCacheSetCapacity(t *testing.T) {
	for _, capacity := range []int{8, 2048} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			h := NewHotCache[int](capacity)
			data := make([][]byte, capacity)
			for i := range capacity {
				data[i] = []byte{byte(i)}
				h.Put(fmt.Sprint("k", i), data[i], i)
			}
			full := h.Len() // shards fill unevenly
			require.Greater(t, full, capacity*9/10)

			h.SetCapacity(capacity / 4)
			assert.LessOrEqual(t, h.Len(), h.Capacity())
			assert.Equal(t, capacity/4, h.Capacity())
			hits := 0
			for i := range capacity {
				if v, ok := h.Get(fmt.Sprint("k", i), data[i]); ok {
					assert.Equal(t, i, v)
					hits++
				}
			}
			assert.Equal(t, h.Len(), hits)
			for i := range capacity { // puts past the new size evict
				h.Put(fmt.Sprint("n", i), data[i], i)
			}
			assert.LessOrEqual(t, h.Len(), capacity/4)

			h.SetCapacity(0)
			assert.Zero(t, h.Len())
			h.Put("k0", data[0], 0)
			h.Offer("k1", data[1], 1)
			assert.Zero(t, h.Len(), "keeps nothing")

			h.SetCapacity(capacity)
			for i := range capacity {
				h.Put(fmt.Sprint("k", i), data[i], i)
			}
			assert.Equal(t, capacity, h.Capacity())
			assert.Equal(t, full, h.Len(), "grown back")
		})
	}
}
