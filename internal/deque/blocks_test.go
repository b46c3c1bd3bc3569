package deque

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBlocksGrowsAndShrinks(t *testing.T) {
	var r Blocks[any]
	for round := 0; round < 3; round++ {
		for i := 0; i < 5000; i++ {
			r.PushBack(i)
			require.Equal(t, 0, *r.Front())
		}
		for i := 0; i < 5000; i++ {
			n, ok := r.PopFront()
			require.True(t, ok)
			require.Equal(t, i, n)
		}
		_, ok := r.PopFront()
		assert.False(t, ok)
		assert.Nil(t, r.Front())
		assert.Same(t, r.head, r.tail, "an emptied queue keeps one block")
		assert.Nil(t, r.head.next, "an emptied queue releases the rest")
		assert.Equal(t, maxSpareBlocks, r.nspare, "a drained backlog keeps only a bounded spare chain")
	}
	first := r.head
	for i := 0; i < 3*BlockSize; i++ { // a consumer that keeps up reuses its block
		r.PushBack(i)
		n, ok := r.PopFront()
		require.True(t, ok)
		require.Equal(t, i, n)
	}
	assert.Same(t, first, r.head)
	for i := 0; i < 40; i++ {
		r.PushBack(i)
		if i%2 == 1 {
			r.PopFront()
		}
	}
	assert.Equal(t, 20, r.Len())
	assert.Equal(t, 20, *r.Front())
}

func TestBlocksMatchesSliceModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var r Blocks[any]
	var model []int
	next := 0
	for step := range 100000 {
		switch k := rng.IntN(10); {
		case k < 5:
			for range rng.IntN(300) {
				r.PushBack(next)
				model = append(model, next)
				next++
			}
		case k < 8:
			dst := make([]any, rng.IntN(400))
			n := r.PopFrontInto(dst)
			require.Equal(t, min(len(dst), len(model)), n, "step %d", step)
			for i := range n {
				if dst[i] != model[i] { // require.Equal per element is too slow here
					t.Fatalf("step %d: element %d is %v, want %d", step, i, dst[i], model[i])
				}
			}
			model = model[n:]
		default:
			x, ok := r.PopFront()
			require.Equal(t, len(model) > 0, ok)
			if ok {
				require.Equal(t, model[0], x)
				model = model[1:]
			}
		}
		require.Equal(t, len(model), r.Len())
		require.LessOrEqual(t, r.nspare, maxSpareBlocks)
	}
	for b := r.head; b != nil; b = b.next { // consumed slots hold no references
		for i, n := range b.items {
			live := (b != r.head || i >= r.first) && (b != r.tail || i < r.next)
			if !live {
				require.Nil(t, n)
			}
		}
	}
}

func TestBlocksTrailingByAChunkAllocatesNothing(t *testing.T) {
	var r Blocks[any]
	cycle := func() {
		for i := 0; i < maxSpareBlocks*BlockSize; i++ {
			r.PushBack(nil)
		}
		for r.Len() > 0 {
			r.PopFront()
		}
	}
	cycle()
	assert.Zero(t, testing.AllocsPerRun(50, cycle))
}
