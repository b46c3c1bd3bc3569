//go:build !clientgo_v038

package informerbuild

import (
	"context"

	cache "github.com/openinformer/cache"
)

// WaitForCacheSyncWithContext waits, without polling, until every started
// informer has synced or ctx ends. Client-go v0.37's factories have no such
// method; the result is this module's GVRSyncResult, which client-go v0.38's
// interface names as its own (see gvrsync_v038.go).
func (f *GVRFactory) WaitForCacheSyncWithContext(ctx context.Context) cache.GVRSyncResult {
	synced, err := f.waitSynced(ctx)
	return cache.GVRSyncResult{Synced: synced, Err: err}
}
