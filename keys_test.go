package cache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/openinformer/cache/internal/keyparts"
)

func TestMetaKeyPartsAreMetaNamespaceKeyFuncs(t *testing.T) {
	for _, obj := range []interface{}{
		newTestPod("ns", "a", "1"), newTestPod("", "a", "1"), ExplicitKey("x/y"),
	} {
		want, err := MetaNamespaceKeyFunc(obj)
		require.NoError(t, err)
		p, err := keyparts.Meta(obj)
		require.NoError(t, err)
		assert.Equal(t, want, p.Key())
	}
	for _, bad := range []interface{}{42, (*v1.Pod)(nil)} {
		_, want := MetaNamespaceKeyFunc(bad)
		_, err := keyparts.Meta(bad)
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
			assert.Equal(t, wantKey(t, obj), p.Key(), name)
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
