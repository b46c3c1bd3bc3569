package compact

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type ghostValue struct{ step int }

// An evicted object a reader still holds is found again for its very
// bytes, and only for them: equal bytes elsewhere, or a deleted key, miss.
func TestHotCacheFindsAnEvictedObjectStillHeld(t *testing.T) {
	h := NewHotCache[any](1)
	data, obj := []byte{1, 2}, &ghostValue{1}
	h.Put("ns/a", data, obj)
	h.Put("ns/b", []byte{3}, &ghostValue{2})
	require.Equal(t, 1, h.Len(), "ns/a was evicted")

	got, ok := h.Get("ns/a", data)
	require.True(t, ok)
	assert.Same(t, obj, got)
	_, ok = h.Get("ns/a", []byte{1, 2})
	assert.False(t, ok, "equal bytes at another address are another version")

	h.Delete("ns/a")
	_, ok = h.Get("ns/a", data)
	assert.False(t, ok)
	runtime.KeepAlive(obj)
}

// Values that are not pointers are never remembered.
func TestHotCacheGhostsOnlyPointers(t *testing.T) {
	h := NewHotCache[any](1)
	data := []byte{1}
	h.Put("ns/a", data, 7)
	h.Put("ns/b", []byte{2}, 8)
	_, ok := h.Get("ns/a", data)
	assert.False(t, ok)
}

// TestHotCacheGhostModel is TestHotCacheModel with pointer values, which
// the cache remembers after eviction: every hit must still be the object
// put for those very bytes, whatever was evicted, updated or collected.
func TestHotCacheGhostModel(t *testing.T) {
	for _, capacity := range []int{1, 7, 2048} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(capacity), 10))
			h := NewHotCache[any](capacity)
			type entry struct {
				data  []byte
				value *ghostValue
			}
			model := map[string]entry{}
			// Old versions stay alive, so that their ghosts could answer.
			var graveyard []entry
			keys := capacity*4 + 3
			hits := 0
			for step := range 6000 {
				key := fmt.Sprintf("ns/k%d", r.IntN(keys))
				switch op := r.IntN(10); {
				case op < 4:
					e := entry{[]byte{byte(step), 1}, &ghostValue{step}}
					graveyard = append(graveyard, model[key])
					h.Put(key, e.data, e.value)
					model[key] = e
				case op < 5:
					graveyard = append(graveyard, model[key])
					h.Delete(key)
					delete(model, key)
				case op < 6 && len(graveyard) > 0:
					old := graveyard[r.IntN(len(graveyard))]
					if old.data != nil && model[key].data == nil {
						_, ok := h.Get(key, old.data)
						require.False(t, ok, "a version no longer stored under key")
					}
				default:
					want, known := model[key]
					if !known {
						continue
					}
					got, ok := h.Get(key, want.data)
					if ok {
						hits++
						require.Same(t, want.value, got)
					}
				}
				if step%1000 == 999 {
					runtime.GC()
				}
			}
			assert.Positive(t, hits)
		})
	}
}
