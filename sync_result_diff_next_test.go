//go:build clientgo_v038

package cache

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientcache "k8s.io/client-go/tools/cache"
)

// client-go v0.38's GVRSyncResult as the oracle: same fields, same error text.
func TestGVRSyncResultMatchesClientGo(t *testing.T) {
	cause := errors.New("stopped")
	for _, synced := range []map[schema.GroupVersionResource]bool{
		nil, {}, {gvrPods: true}, {gvrPods: false, gvrDeploys: true, gvrJobs: false},
	} {
		for _, err := range []error{nil, cause, context.DeadlineExceeded} {
			theirs := clientcache.GVRSyncResult{Err: err, Synced: synced}.AsError()
			ours := GVRSyncResult{Err: err, Synced: synced}.AsError()
			if theirs == nil {
				assert.NoError(t, ours)
				continue
			}
			assert.EqualError(t, ours, theirs.Error())
			assert.Equal(t, errors.Is(theirs, err), errors.Is(ours, err))
		}
	}
}
