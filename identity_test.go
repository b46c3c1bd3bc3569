package cache

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	identityPodsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	identityConfigMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func TestM9_InformerNameRegistration(t *testing.T) {
	t.Cleanup(ResetInformerNamesForTesting)

	_, err := NewInformerName("")
	require.EqualError(t, err, "informer name cannot be empty")

	n, err := NewInformerName("controller-a")
	require.NoError(t, err)
	assert.Equal(t, "controller-a", n.Name())

	_, err = NewInformerName("controller-a")
	require.EqualError(t, err, `informer name "controller-a" is already registered`)

	n.Release()
	again, err := NewInformerName("controller-a")
	require.NoError(t, err, "a released name can be registered again")
	assert.NotSame(t, n, again)
}

func TestM9_FirstIdentityPerResourceIsReserved(t *testing.T) {
	t.Cleanup(ResetInformerNamesForTesting)
	n, err := NewInformerName("controller-b")
	require.NoError(t, err)

	pods := n.WithResource(identityPodsGVR)
	dup := n.WithResource(identityPodsGVR)
	cms := n.WithResource(identityConfigMapsGVR)

	assert.True(t, pods.Reserved())
	assert.False(t, dup.Reserved(), "a second identity for the same resource publishes no metrics")
	assert.True(t, cms.Reserved())
	assert.Equal(t, "controller-b", pods.Name())
	assert.Equal(t, identityPodsGVR, pods.GroupVersionResource())
}

func TestM9_ReleaseUnreservesIdentities(t *testing.T) {
	t.Cleanup(ResetInformerNamesForTesting)
	n, err := NewInformerName("controller-c")
	require.NoError(t, err)
	pods := n.WithResource(identityPodsGVR)

	n.Release()
	n.Release() // idempotent

	assert.False(t, pods.Reserved())
	assert.False(t, n.WithResource(identityPodsGVR).Reserved(), "a released name reserves nothing")
}

func TestM9_ReleaseOfStaleNameKeepsNewRegistration(t *testing.T) {
	t.Cleanup(ResetInformerNamesForTesting)
	old, err := NewInformerName("controller-d")
	require.NoError(t, err)
	old.Release()
	fresh, err := NewInformerName("controller-d")
	require.NoError(t, err)

	old.Release()

	_, err = NewInformerName("controller-d")
	require.Error(t, err, "releasing a stale handle must not free the name held by another")
	assert.True(t, fresh.WithResource(identityPodsGVR).Reserved())
}

func TestM9_NilAndZeroIdentities(t *testing.T) {
	var n *InformerName
	assert.Equal(t, "", n.Name())
	n.Release()
	id := n.WithResource(identityPodsGVR)
	assert.False(t, id.Reserved())
	assert.Equal(t, identityPodsGVR, id.GroupVersionResource())
	assert.False(t, InformerNameAndResource{}.Reserved())
}

func TestM9_ConcurrentRegistrationHasOneWinner(t *testing.T) {
	t.Cleanup(ResetInformerNamesForTesting)
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := 0
	for range 16 {
		wg.Go(func() {
			if _, err := NewInformerName("contended"); err == nil {
				mu.Lock()
				winners++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 1, winners)
}
