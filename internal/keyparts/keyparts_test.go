package keyparts

import (
	"hash/maphash"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestKeyPartsHashAsTheirKey checks that parts hash exactly as the key they
// join, so a key read from an object and the same key held whole (a
// tombstone's) collide, and no other pair does more often than any hash.
func TestKeyPartsHashAsTheirKey(t *testing.T) {
	seed := maphash.MakeSeed()
	for _, p := range []Parts{
		{Name: "a"}, {Namespace: "ns", Name: "a"}, {Namespace: "a", Name: "b/c"},
		{Namespace: "a/b", Name: "c"}, {Name: "a/b/c"}, {Namespace: "ns", Name: ""},
		{Namespace: "kube-system", Name: "a-very-long-name-that-goes-on-and-on-" + string(make([]byte, 300))},
	} {
		assert.Equal(t, maphash.String(seed, p.Key()), p.Hash(seed), "%q", p.Key())
		assert.Equal(t, p.Hash(seed), Of(p.Key()).Hash(seed), "%q held whole", p.Key())
		assert.Zero(t, p.Compare(Of(p.Key())), "%q held whole", p.Key())
	}
}

func TestKeyPartsIs(t *testing.T) {
	p := Parts{Namespace: "ns", Name: "a"}
	assert.True(t, p.Is("ns/a"))
	for _, k := range []string{"ns/b", "nsa", "ns/a/", "n/sa", "a", ""} {
		assert.False(t, p.Is(k), k)
	}
	assert.True(t, Parts{Name: "a"}.Is("a"))
	assert.False(t, Parts{Name: "a"}.Is("/a"))
}

// PopBatch finds repeated keys through a set of key hashes: a hash seen
// twice ends the batch, so a collision between two keys only ends a batch
// early, and the set forgets everything between batches.
func TestHashSetEndsBatchesOnlyEarly(t *testing.T) {
	var s HashSet
	s.Reset(3)
	assert.Len(t, s.slots, 8, "room for 3 at most half full")
	assert.True(t, s.Add(5))
	assert.True(t, s.Add(13), "same slot, another hash")
	assert.False(t, s.Add(5))
	assert.False(t, s.Add(13))
	s.Reset(1000)
	assert.Len(t, s.slots, 2048)
	assert.True(t, s.Add(5), "forgotten by reset")

	seed := maphash.MakeSeed()
	pod := Parts{Namespace: "ns", Name: "a"}
	assert.Equal(t, pod.Hash(seed), Of("ns/a").Hash(seed), "a tombstone's key hashes as its object")
	assert.NotEqual(t, Of("/a").Hash(seed), Of("a").Hash(seed), "the slash is part of the key")
}
