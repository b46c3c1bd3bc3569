package cache_test

// This file is client-go user code with only the tools/cache import
// swapped, covering every exported signature that mentions client-go's
// concrete *Reflector (WatchErrorHandler, WatchErrorHandlerWithContext,
// DefaultWatchErrorHandler, Config's two handler fields and the informers'
// SetWatchErrorHandler*), next to the APIs such code hands informers to:
// informer factories and controller-runtime's cache options. It compiles
// unchanged except for one spelling: a handler literal names client-go's
// Reflector, because the informer interfaces it is given to are client-go's
// (see docs/BEHAVIOR.md, "Import swap").

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
)

// controllerRuntimeCacheOptions has the types of controller-runtime's
// cache.Options fields that take informer code.
type controllerRuntimeCacheOptions struct {
	NewInformer              func(clientcache.ListerWatcher, runtime.Object, time.Duration, clientcache.Indexers) clientcache.SharedIndexInformer
	DefaultWatchErrorHandler clientcache.WatchErrorHandlerWithContext
}

func TestImportSwapCompiles(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)

	// A factory's informer kept in the package's interface type.
	var pods cache.SharedIndexInformer = factory.Core().V1().Pods().Informer()
	// Our informer handed to a factory.
	var secrets cache.SharedIndexInformer = factory.InformerFor(&v1.Secret{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		lw := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "secrets", "", fields.Everything())
		return cache.NewSharedIndexInformer(lw, &v1.Secret{}, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	})
	typed := cache.NewTypedSharedIndexInformer[*v1.Pod](cache.NewSharedIndexInformer(&cache.ListWatch{}, &v1.Pod{}, 0, cache.Indexers{}))

	// The default handler as a value, for both packages' informers.
	require.NoError(t, pods.SetWatchErrorHandlerWithContext(cache.DefaultWatchErrorHandler))
	require.NoError(t, secrets.SetWatchErrorHandlerWithContext(cache.DefaultWatchErrorHandler))
	require.NoError(t, typed.SetWatchErrorHandlerWithContext(cache.DefaultWatchErrorHandler))

	// Handler literals, calling the default handler as controller-runtime's do.
	var withCtx cache.WatchErrorHandlerWithContext = func(ctx context.Context, r *clientcache.Reflector, err error) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
	var plain cache.WatchErrorHandler = func(r *clientcache.Reflector, err error) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
	require.NoError(t, secrets.SetWatchErrorHandler(plain))
	require.NoError(t, typed.SetWatchErrorHandler(func(r *clientcache.Reflector, err error) { plain(r, err) }))
	require.NoError(t, pods.SetWatchErrorHandlerWithContext(withCtx))

	cfg := cache.Config{WatchErrorHandler: plain, WatchErrorHandlerWithContext: withCtx}
	assert.NotNil(t, cache.New(&cfg))

	cr := controllerRuntimeCacheOptions{NewInformer: cache.NewSharedIndexInformer, DefaultWatchErrorHandler: cache.DefaultWatchErrorHandler}
	assert.NotNil(t, cr.NewInformer(&cache.ListWatch{}, &v1.Pod{}, 0, cache.Indexers{}))
	assert.NotNil(t, cr.DefaultWatchErrorHandler)
}
