package compact

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

type modelEntry struct {
	data  []byte
	value int
}

// TestHotCacheModel drives random operations against the cache and a plain
// map of what was last put: a hit must be exactly what the model holds for
// those very bytes, a fresh Put is always readable, and the size bound holds.
func TestHotCacheModel(t *testing.T) {
	for _, capacity := range []int{1, 7, 64, 2048} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(capacity), 9))
			h := NewHotCache[int](capacity)
			model := map[string]modelEntry{}
			keys := capacity*2 + 3
			for step := range 5000 {
				key := fmt.Sprintf("ns/k%d", r.IntN(keys))
				switch op := r.IntN(10); {
				case op < 4:
					data := []byte{byte(step), 1}
					h.Put(key, data, step)
					model[key] = modelEntry{data, step}
					got, ok := h.Get(key, data)
					require.True(t, ok, "a fresh put is readable")
					require.Equal(t, step, got)
				case op < 5:
					h.Delete(key)
					delete(model, key)
				case op < 6 && model[key].data != nil:
					// Equal bytes at another address are another version.
					_, ok := h.Get(key, append([]byte(nil), model[key].data...))
					require.False(t, ok)
				default:
					want, known := model[key]
					data := want.data
					if !known {
						data = []byte{0}
					}
					read := h.Get
					if op == 9 { // a write's read of its old object
						read = h.TakeOld
					}
					got, ok := read(key, data)
					if ok {
						require.True(t, known)
						require.Equal(t, want.value, got)
					}
				}
				require.LessOrEqual(t, h.Len(), h.Capacity())
			}
			assert.GreaterOrEqual(t, h.Capacity(), capacity)
			assert.Less(t, h.Capacity(), capacity+hotShards)
		})
	}
}

// A working set that fits is never evicted: every read after the first put
// hits. Sharded caches bound each shard, so there a working set fits when it
// is well below the capacity (here half of it, 32 keys a shard on average
// against 64 slots).
func TestHotCacheKeepsAWorkingSetThatFits(t *testing.T) {
	for _, tc := range []struct{ capacity, working int }{{1000, 1000}, {2048, 1024}} {
		h := NewHotCache[string](tc.capacity)
		keepsWorkingSet(t, h, tc.working)
	}
}

func keepsWorkingSet(t *testing.T, h *HotCache[string], working int) {
	data := map[string][]byte{}
	for i := range working {
		k := fmt.Sprintf("ns/p%d", i)
		data[k] = []byte(k)
		h.Put(k, data[k], k)
	}
	for range 3 {
		for k, d := range data {
			v, ok := h.Get(k, d)
			require.True(t, ok, k)
			require.Equal(t, k, v)
		}
	}
	assert.Equal(t, working, h.Len())
}

// CLOCK gives a recently read entry a second chance over one never read.
func TestHotCacheEvictsUnreadFirst(t *testing.T) {
	h := NewHotCache[int](2)
	a, b, c := []byte("a"), []byte("b"), []byte("c")
	h.Put("a", a, 1)
	h.Put("b", b, 2)
	_, _ = h.Get("a", a)
	h.Put("c", c, 3)
	_, ok := h.Get("a", a)
	assert.True(t, ok, "a was read")
	_, ok = h.Get("b", b)
	assert.False(t, ok, "b was not")
	h.Delete("a")
	assert.Equal(t, 1, h.Len())
	h.Delete("missing")
}

func TestHotCacheConcurrentReaders(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := NewHotCache[int](4096)
	const keys = 3000
	data := make([][]byte, keys)
	for i := range data {
		data[i] = []byte{byte(i), byte(i >> 8)}
		h.Put(fmt.Sprint(i), data[i], i)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 5000 {
				k := (i*7 + w*13) % keys
				if v, ok := h.Get(fmt.Sprint(k), data[k]); ok && v != k {
					t.Errorf("key %d read %d", k, v)
				}
				if w == 0 && i%10 == 0 {
					h.Put(fmt.Sprint(k), data[k], k)
				}
			}
		})
	}
	wg.Wait()
}

// requireHit checks that key's entry for data is want.
func requireHit(t *testing.T, h *HotCache[string], key string, data []byte, want string) {
	t.Helper()
	got, ok := h.Get(key, data)
	require.True(t, ok)
	assert.Equal(t, want, got)
}

// A Put keeps the key's version before it readable, and only that one.
func TestHotCacheKeepsThePreviousVersion(t *testing.T) {
	h := NewHotCache[string](4)
	v1, v2, v3 := []byte{1}, []byte{2}, []byte{3}
	h.Put("k", v1, "one")
	h.Put("k", v2, "two")
	requireHit(t, h, "k", v1, "one")
	requireHit(t, h, "k", v2, "two")
	h.Put("k", v3, "three")
	_, ok := h.Get("k", v1)
	assert.False(t, ok, "two versions back is gone")
	h.Delete("k")
	_, ok = h.Get("k", v2)
	assert.False(t, ok)
	assert.Equal(t, 0, h.Len())
}

// A write reads its old object once, before its Put (an informer's
// lookup) or after it (a store's own prior read); either way the cache
// then holds the key's new version alone.
func TestHotCacheTakeOldLeavesOneVersion(t *testing.T) {
	h := NewHotCache[string](4)
	v1, v2, v3 := []byte{1}, []byte{2}, []byte{3}
	h.Put("k", v1, "one")
	got, ok := h.TakeOld("k", v1)
	require.True(t, ok)
	assert.Equal(t, "one", got)
	h.Put("k", v2, "two")
	_, ok = h.Get("k", v1)
	assert.False(t, ok, "read before the put: not kept as the previous version")
	requireHit(t, h, "k", v2, "two")

	h.Put("k", v3, "three")
	got, ok = h.TakeOld("k", v2)
	require.True(t, ok, "read after the put: the previous version")
	assert.Equal(t, "two", got)
	_, ok = h.Get("k", v2)
	assert.False(t, ok, "taken: dropped")
	requireHit(t, h, "k", v3, "three")

	h.Put("k", v1, "four")
	requireHit(t, h, "k", v3, "three") // an untaken version is kept as before
	_, ok = h.TakeOld("other", v1)
	assert.False(t, ok)
}

// Offer fills an absent key only: a reader's decode of older bytes never
// displaces what a writer put.
func TestHotCacheOfferNeverDisplaces(t *testing.T) {
	h := NewHotCache[string](4)
	old, cur := []byte{1}, []byte{2}
	h.Put("k", cur, "written")
	h.Offer("k", old, "read")
	requireHit(t, h, "k", cur, "written")
	_, ok := h.Get("k", old)
	assert.False(t, ok)

	h.Offer("other", old, "read")
	requireHit(t, h, "other", old, "read")
}

// Once full, the cache allocates nothing to put, offer, get or evict.
func TestHotCacheSteadyStateAllocatesNothing(t *testing.T) {
	for _, capacity := range []int{8, shardedFrom} {
		h := NewHotCache[any](capacity)
		keys := make([]string, 4*capacity)
		data := make([][]byte, len(keys))
		for i := range keys {
			keys[i], data[i] = fmt.Sprint("ns/pod-", i), []byte{byte(i), 1}
		}
		value := any(&modelEntry{})
		i := 0
		step := func() {
			k := i % len(keys)
			if _, ok := h.Get(keys[k], data[k]); !ok {
				h.Offer(keys[k], data[k], value)
			}
			h.Put(keys[k], data[k], value)
			i++
		}
		for range 2 * len(keys) {
			step()
		}
		assert.Zero(t, testing.AllocsPerRun(len(keys), step), "capacity %d", capacity)
	}
}
