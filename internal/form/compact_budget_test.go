package form

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinformer/cache/internal/fixtures"
)

// holdAllocs is the allocations per Hold of f, after every pod was held
// once.
func holdAllocs(t *testing.T, f *Compact) float64 {
	t.Helper()
	pods := fixtures.Pods(1, 100)
	for _, pod := range pods {
		_, err := f.Hold(pod.Namespace+"/"+pod.Name, pod)
		require.NoError(t, err)
	}
	i := 0
	return testing.AllocsPerRun(200, func() {
		pod := pods[i%len(pods)]
		i++
		_, _ = f.Hold(pod.Namespace+"/"+pod.Name, pod)
	})
}

// Under its budget a write allocates what it does without one; over it,
// the compressed encoding's pieces more (one or two: compact's plan fills
// size classes).
func TestBudgetHoldAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled buffers")
	}
	none := holdAllocs(t, NewCompact(-1))
	under := holdAllocs(t, NewColdCompact(-1, Cold{Budget: 1 << 40, OnlyOverBudget: true}))
	over := NewColdCompact(-1, Cold{Budget: 1, OnlyOverBudget: true})
	overAllocs := holdAllocs(t, over)
	t.Logf("allocations per write: no budget %.1f, under %.1f, over %.1f", none, under, overAllocs)
	assert.Equal(t, none, under)
	assert.LessOrEqual(t, overAllocs, none+2)
	assert.Positive(t, over.Stats().Cooled)
}
