//go:build clientgo_v038

package metadatainformer

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
	clientmetadatainformer "k8s.io/client-go/metadata/metadatainformer"

	"github.com/openinformer/cache/internal/factorytest"
)

// client-go v0.38's metadata factory with WithShardSelector is the oracle:
// the same objects cached for a selector, the same one when an informer's
// SetShardSelector conflicts with the factory's before Start, and the same
// refusal after it.
func TestWithShardSelectorMatchesClientGo(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, prepare := range []func(*testing.T, factorytest.Factory){nil, factorytest.HighHalfBeforeStart(pods)} {
		client, _ := shardClient(t, factorytest.LowHalf)
		ours, oursErr := factorytest.CachedKeys(t, NewSharedInformerFactoryWithOptions(client, 0, WithShardSelector(factorytest.LowHalf)), pods, prepare)
		client, _ = shardClient(t, factorytest.LowHalf)
		theirs, theirsErr := factorytest.CachedKeys(t, clientmetadatainformer.NewSharedInformerFactoryWithOptions(client, 0, clientmetadatainformer.WithShardSelector(factorytest.LowHalf)), pods, prepare)
		factorytest.AssertKeys(t, theirs, ours)
		if fmt.Sprint(oursErr) != fmt.Sprint(theirsErr) {
			t.Errorf("SetShardSelector after Start: ours %v, client-go %v", oursErr, theirsErr)
		}
	}
}
