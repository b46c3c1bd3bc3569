package cache_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
)

// Values a program inspects by type or identity are the same for both
// packages, whichever package produced them and whichever names the check.

func TestImportSwapKeyErrorMatchesEitherPackage(t *testing.T) {
	ours := cache.NewStore(cache.MetaNamespaceKeyFunc).Add(42)
	theirs := clientcache.NewStore(clientcache.MetaNamespaceKeyFunc).Add(42)
	for name, err := range map[string]error{"ours": ours, "client-go": theirs} {
		var a cache.KeyError
		var b clientcache.KeyError
		assert.True(t, errors.As(err, &a), name)
		assert.True(t, errors.As(err, &b), name)
		assert.Equal(t, 42, a.Obj, name)
	}
	assert.Equal(t, theirs.Error(), ours.Error())
}

func TestImportSwapVeryShortWatchErrorMatchesEitherPackage(t *testing.T) {
	var err error = &cache.VeryShortWatchError{Name: "r"}
	var theirs *clientcache.VeryShortWatchError
	require.True(t, errors.As(err, &theirs))
	assert.Equal(t, (&clientcache.VeryShortWatchError{Name: "r"}).Error(), err.Error())
}

func TestImportSwapQueueValuesKeepClientGoIdentity(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"}}
	known := cache.NewStore(cache.MetaNamespaceKeyFunc)
	require.NoError(t, known.Add(pod))
	for name, q := range map[string]clientcache.Queue{
		"ours":      cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KnownObjects: known}),
		"client-go": clientcache.NewDeltaFIFOWithOptions(clientcache.DeltaFIFOOptions{KnownObjects: known}),
	} {
		require.NoError(t, q.Replace(nil, "1"), name)
		_, err := q.Pop(func(item interface{}, _ bool) error {
			deltas, ok := item.(clientcache.Deltas)
			require.True(t, ok, "%s: popped %T", name, item)
			switch obj := deltas.Newest().Object.(type) {
			case clientcache.DeletedFinalStateUnknown:
				assert.Equal(t, "ns/gone", obj.Key, name)
			default:
				t.Errorf("%s: want client-go's tombstone type, got %T", name, obj)
			}
			return nil
		})
		require.NoError(t, err, name)
		q.Close()
		_, err = q.Pop(func(interface{}, bool) error { return nil })
		assert.ErrorIs(t, err, clientcache.ErrFIFOClosed, name)
		assert.ErrorIs(t, err, cache.ErrFIFOClosed, name)
	}
}
