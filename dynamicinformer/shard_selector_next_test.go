//go:build clientgo_v038

package dynamicinformer

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
	clientdynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"

	"github.com/openinformer/cache/internal/factorytest"
)

// client-go v0.38's dynamic factory with WithShardSelector is the oracle:
// the same objects cached for a selector, the same one when an informer's
// SetShardSelector conflicts with the factory's before Start, and the same
// refusal after it.
func TestWithShardSelectorMatchesClientGo(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, prepare := range []func(*testing.T, factorytest.Factory){nil, factorytest.HighHalfBeforeStart(deployments)} {
		client, _ := shardClient(t, factorytest.LowHalf)
		ours, oursErr := factorytest.CachedKeys(t, NewDynamicSharedInformerFactoryWithOptions(client, 0, WithShardSelector(factorytest.LowHalf)), deployments, prepare)
		client, _ = shardClient(t, factorytest.LowHalf)
		theirs, theirsErr := factorytest.CachedKeys(t, clientdynamicinformer.NewDynamicSharedInformerFactoryWithOptions(client, 0, clientdynamicinformer.WithShardSelector(factorytest.LowHalf)), deployments, prepare)
		factorytest.AssertKeys(t, theirs, ours)
		if fmt.Sprint(oursErr) != fmt.Sprint(theirsErr) {
			t.Errorf("SetShardSelector after Start: ours %v, client-go %v", oursErr, theirsErr)
		}
	}
}
