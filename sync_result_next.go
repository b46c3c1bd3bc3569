package cache

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GVRSyncResult is SyncResult for informers keyed by the resource they
// watch, as the dynamic and metadata factories key theirs (client-go
// v0.38). It is a struct of this package, like SyncResult, because
// client-go v0.37 has no such type to alias.
type GVRSyncResult struct {
	// Err is why waiting stopped, context.Cause of its context; nil when
	// every informer synced.
	Err error
	// Synced maps each informer's resource to whether it synced.
	Synced map[schema.GroupVersionResource]bool
}

// AsError returns nil when everything synced, otherwise an error naming the
// unsynced resources (sorted) and wrapping Err.
func (r GVRSyncResult) AsError() error {
	if r.Err == nil {
		return nil
	}
	return unsyncedError(r.Err, r.Synced, schema.GroupVersionResource.String)
}

// unsyncedError names, sorted, the informers synced marks false, and wraps
// err, the reason waiting stopped.
func unsyncedError[K comparable](err error, synced map[K]bool, name func(K) string) error {
	unsynced := make([]string, 0, len(synced))
	for k, ok := range synced {
		if !ok {
			unsynced = append(unsynced, name(k))
		}
	}
	slices.Sort(unsynced)
	return fmt.Errorf("failed to sync all caches: %s: %w", strings.Join(unsynced, ", "), err)
}
