package labelset

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

// size is how many sets the interner knows, collected ones not yet
// forgotten included.
func (in *Interner) size() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.sets)
}

func TestSetReadsAsLabels(t *testing.T) {
	var in Interner
	s := in.Intern(map[string]string{"app": "web", "tier": "", "pod-template-hash": "7d4b9c8f6"})
	assert.Equal(t, 3, s.Len())
	for k, want := range map[string]string{"app": "web", "tier": "", "pod-template-hash": "7d4b9c8f6"} {
		v, ok := s.Lookup(k)
		assert.True(t, ok, k)
		assert.Equal(t, want, v, k)
		assert.True(t, s.Has(k), k)
		assert.Equal(t, want, s.Get(k), k)
	}
	_, ok := s.Lookup("ap")
	assert.False(t, ok, "a prefix of a key is not a key")
	assert.False(t, s.Has("web"), "a value is not a key")
	assert.Equal(t, "", s.Get("missing"))

	for sel, want := range map[string]bool{
		"app=web": true, "app!=web": false, "tier": true, "!tier": false, "app in (web,api),tier=": true,
		"pod-template-hash=7d4b9c8f6,app=api": false, "missing": false, "!missing": true,
	} {
		parsed, err := labels.Parse(sel)
		require.NoError(t, err, sel)
		assert.Equal(t, want, parsed.Matches(s), sel)
		assert.Equal(t, parsed.Matches(labels.Set{"app": "web", "tier": "", "pod-template-hash": "7d4b9c8f6"}), parsed.Matches(s), "as a labels.Set matches: %s", sel)
	}
}

func TestInternSharesEqualSets(t *testing.T) {
	var in Interner
	a := in.Intern(map[string]string{"app": "web", "tier": "front"})
	b := in.Intern(map[string]string{"tier": "front", "app": "web"})
	c := in.Intern(map[string]string{"app": "web", "tier": "back"})
	// Zero bytes separate keys from values: no two label sets share a form.
	d := in.Intern(map[string]string{"app": "web\x00tier"})
	assert.Same(t, a, b)
	assert.NotSame(t, a, c)
	assert.NotSame(t, a, d)
	assert.Same(t, in.Intern(nil), in.Intern(map[string]string{}), "every object without labels shares one set")
	assert.Equal(t, 0, in.Intern(nil).Len())
	runtime.KeepAlive([]*Set{a, b, c, d})
}

func TestInternAllocations(t *testing.T) {
	var in Interner
	m := map[string]string{"app": "web", "tier": "front", "pod-template-hash": "7d4b9c8f6"}
	held := in.Intern(m)
	allocs := testing.AllocsPerRun(100, func() { in.Intern(m) })
	assert.Zero(t, allocs, "interning labels already held allocates nothing")
	runtime.KeepAlive(held)
}

// The interner forgets a set once nothing holds it, and a set made again
// for the same labels afterwards is kept.
func TestInternForgetsCollectedSets(t *testing.T) {
	var in Interner
	kept := in.Intern(map[string]string{"app": "kept"})
	for i := range 100 {
		in.Intern(map[string]string{"app": fmt.Sprint("gone-", i)})
	}
	forgotten := func() bool {
		runtime.GC()
		return in.size() == 1
	}
	for i := 0; i < 100 && !forgotten(); i++ {
		runtime.Gosched()
	}
	require.Equal(t, 1, in.size(), "only the held set is remembered")
	assert.Same(t, kept, in.Intern(map[string]string{"app": "kept"}))
	again := in.Intern(map[string]string{"app": "gone-1"})
	assert.Same(t, again, in.Intern(map[string]string{"app": "gone-1"}))
	runtime.KeepAlive(kept)
}
