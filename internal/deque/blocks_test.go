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

// modelItem carries its sequence number and a reference, so that the
// test can see consumed slots released, without allocating per push.
type modelItem struct {
	seq int
	ref *int
}

var modelRef = new(int)

// sliceModel is the reference FIFO: a slice with a head index, compacted
// once half of it is consumed, so that it neither reallocates per pop nor
// grows without bound.
type sliceModel struct {
	s    []int
	head int
}

func (m *sliceModel) push(v int)  { m.s = append(m.s, v) }
func (m *sliceModel) live() []int { return m.s[m.head:] }

func (m *sliceModel) drop(n int) {
	m.head += n
	if m.head > len(m.s)/2 {
		m.s = m.s[:copy(m.s, m.s[m.head:])]
		m.head = 0
	}
}

func TestBlocksMatchesSliceModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var r Blocks[modelItem]
	var m sliceModel
	next := 0
	dst := make([]modelItem, 400)
	// Plain comparisons: testify's per call cost would dominate this loop.
	for step := range 100000 {
		switch k := rng.IntN(10); {
		case k < 5:
			for range rng.IntN(300) {
				r.PushBack(modelItem{next, modelRef})
				m.push(next)
				next++
			}
		case k < 8:
			dst := dst[:rng.IntN(400)]
			n := r.PopFrontInto(dst)
			live := m.live()
			if n != min(len(dst), len(live)) {
				t.Fatalf("step %d: popped %d of %d into %d", step, n, len(live), len(dst))
			}
			for i := range n {
				if dst[i].seq != live[i] {
					t.Fatalf("step %d: element %d is %d, want %d", step, i, dst[i].seq, live[i])
				}
			}
			m.drop(n)
		default:
			x, ok := r.PopFront()
			live := m.live()
			if ok != (len(live) > 0) || ok && x.seq != live[0] {
				t.Fatalf("step %d: popped %v %v, model %v", step, x, ok, live[:min(len(live), 1)])
			}
			if ok {
				m.drop(1)
			}
		}
		if r.Len() != len(m.live()) || r.nspare > maxSpareBlocks {
			t.Fatalf("step %d: length %d, want %d; %d spare blocks", step, r.Len(), len(m.live()), r.nspare)
		}
	}
	for b := r.head; b != nil; b = b.next { // consumed slots hold no references
		for i, n := range b.items {
			live := (b != r.head || i >= r.first) && (b != r.tail || i < r.next)
			if !live {
				require.Nil(t, n.ref)
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
