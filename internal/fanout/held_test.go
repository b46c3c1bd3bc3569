package fanout

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/store"
)

// countingForm is the compact form with a count of the views that keep
// what they decode: a handler's read back of a boxed add.
type countingForm struct {
	form.Form
	kept atomic.Int64
}

func (c *countingForm) View(key string, held any, keep bool) (any, error) {
	if keep {
		c.kept.Add(1)
	}
	return c.Form.View(key, held, keep)
}

// preheldPods are n pods held ahead by a compact store (hot cache off,
// so that every read back is a decode, counted), as a watch-list's
// initial list reaches the fan-out.
func preheldPods(t *testing.T, n int) ([]any, *countingForm) {
	views := &countingForm{Form: form.NewCompact(-1)}
	m := store.New(nil, store.Config{Form: views})
	list := make([]any, n)
	for i := range list {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i), ResourceVersion: "1"}}
		p, err := m.Prehold("ns/"+pod.Name, pod)
		require.NoError(t, err)
		list[i] = p
	}
	return list, views
}

// Preheld objects go to listeners preheldChunk at a time, since each chunk
// is decoded whole; others notificationChunk at a time.
func TestChunkFor(t *testing.T) {
	list, _ := preheldPods(t, 1)
	held := make([]Notification, 3*preheldChunk)
	for i := range held {
		held[i].New = list[0]
	}
	assert.Equal(t, preheldChunk, chunkFor(held))
	assert.Equal(t, 5, chunkFor(held[:5]))
	plain := make([]Notification, 2*notificationChunk)
	assert.Equal(t, notificationChunk, chunkFor(plain))
}

// The fan-out of a chunk of preheld adds allocates per chunk, not per
// object: the boxes share one slab, and nothing is decoded on the
// processLoop.
func TestAllocBudgetPreheldAddsFanout(t *testing.T) {
	list, views := preheldPods(t, preheldChunk)
	ns := make([]Notification, len(list))
	for i, obj := range list {
		ns[i] = Notification{Kind: Add, New: obj, Initial: true}
	}
	var buf [preheldChunk]Notification
	allocs := testing.AllocsPerRun(20, func() { _ = stagePreheld(ns, buf[:0], true) })
	assert.LessOrEqual(t, allocs, float64(1), "allocations per chunk of %d", preheldChunk)
	assert.Zero(t, views.kept.Load(), "decodes on the processLoop")
}
