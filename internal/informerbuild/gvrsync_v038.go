//go:build clientgo_v038

package informerbuild

import (
	"context"

	clientcache "k8s.io/client-go/tools/cache"
)

// WaitForCacheSyncWithContext waits, without polling, until every started
// informer has synced or ctx ends, returning client-go v0.38's result type,
// as its dynamic and metadata factory interfaces require.
func (f *GVRFactory) WaitForCacheSyncWithContext(ctx context.Context) clientcache.GVRSyncResult {
	synced, err := f.waitSynced(ctx)
	return clientcache.GVRSyncResult{Synced: synced, Err: err}
}
