package cache

import (
	"hash/maphash"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// TestKeyPartsHashAsTheirKey checks that parts hash exactly as the key they
// join, so a key read from an object and the same key held whole (a
// tombstone's) collide, and no other pair does more often than any hash.
func TestKeyPartsHashAsTheirKey(t *testing.T) {
	seed := maphash.MakeSeed()
	for _, p := range []keyParts{
		{name: "a"}, {namespace: "ns", name: "a"}, {namespace: "a", name: "b/c"},
		{namespace: "a/b", name: "c"}, {name: "a/b/c"}, {namespace: "ns", name: ""},
		{namespace: "kube-system", name: "a-very-long-name-that-goes-on-and-on-" + string(make([]byte, 300))},
	} {
		assert.Equal(t, maphash.String(seed, p.key()), p.hash(seed), "%q", p.key())
		assert.Equal(t, p.hash(seed), partsOfKey(p.key()).hash(seed), "%q held whole", p.key())
		assert.Zero(t, p.compare(partsOfKey(p.key())), "%q held whole", p.key())
	}
}

func TestMetaKeyPartsAreMetaNamespaceKeyFuncs(t *testing.T) {
	for _, obj := range []interface{}{
		newTestPod("ns", "a", "1"), newTestPod("", "a", "1"), ExplicitKey("x/y"),
	} {
		want, err := MetaNamespaceKeyFunc(obj)
		require.NoError(t, err)
		p, err := metaKeyParts(obj)
		require.NoError(t, err)
		assert.Equal(t, want, p.key())
	}
	for _, bad := range []interface{}{42, (*v1.Pod)(nil)} {
		_, want := MetaNamespaceKeyFunc(bad)
		_, err := metaKeyParts(bad)
		assert.Equal(t, want, err)
	}
}

func TestQueueKeyerPartsMatchKeys(t *testing.T) {
	tomb := DeletedFinalStateUnknown{Key: "ns/gone", Obj: newTestPod("ns", "gone", "1")}
	for name, k := range map[string]queueKeyer{
		"meta":   newQueueKeyer(MetaNamespaceKeyFunc),
		"custom": newQueueKeyer(func(obj interface{}) (string, error) { return MetaNamespaceKeyFunc(obj) }),
	} {
		for _, obj := range []interface{}{newTestPod("ns", "a", "1"), tomb, Deltas{{Object: tomb}}} {
			p, err := k.partsOf(obj)
			require.NoError(t, err, name)
			assert.Equal(t, wantKey(t, obj), p.key(), name)
		}
		_, err := k.partsOf(Deltas{})
		assert.ErrorIs(t, err, ErrZeroLengthDeltasObject, name)
		assert.Error(t, k.check(42), name)
	}
}

// wantKey is the key DeletionHandlingMetaNamespaceKeyFunc gives the newest
// object of obj.
func wantKey(t *testing.T, obj interface{}) string {
	if ds, ok := obj.(Deltas); ok {
		obj = ds[len(ds)-1].Object
	}
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	require.NoError(t, err)
	return key
}
