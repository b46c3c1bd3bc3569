//go:build clientgo_v038

package cache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/sharding"
	clientcache "k8s.io/client-go/tools/cache"
)

// client-go v0.38's NewShardedListWatch as the oracle: every scenario ends
// the same way, requests, items, remaining counts, errors and logs included.
func TestNewShardedListWatchMatchesClientGo(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	theirs := shardedScenarios(t, func(lw ListerWatcher, sel sharding.Selector) ListerWatcher {
		return clientcache.NewShardedListWatch(lw, sel)
	})
	ours := shardedScenarios(t, NewShardedListWatch)
	assert.Equal(t, theirs, ours)
}
