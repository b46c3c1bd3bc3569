//go:build clientgo_v038

package dynamicinformer

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
	clientdynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"
)

// client-go v0.38's dynamic factory with WithShardSelector is the oracle:
// the same objects cached for a selector, the same one when an informer's
// SetShardSelector conflicts with the factory's before Start, and the same
// refusal after it.
func TestWithShardSelectorMatchesClientGo(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, prepare := range []func(*testing.T, clientdynamicinformer.DynamicSharedInformerFactory){nil, setHighHalf} {
		client, _ := shardClient(t, lowHalf)
		ours, oursErr := cachedKeys(t, NewDynamicSharedInformerFactoryWithOptions(client, 0, WithShardSelector(lowHalf)), prepare)
		client, _ = shardClient(t, lowHalf)
		theirs, theirsErr := cachedKeys(t, clientdynamicinformer.NewDynamicSharedInformerFactoryWithOptions(client, 0, clientdynamicinformer.WithShardSelector(lowHalf)), prepare)
		assertKeys(t, theirs, ours)
		if fmt.Sprint(oursErr) != fmt.Sprint(theirsErr) {
			t.Errorf("SetShardSelector after Start: ours %v, client-go %v", oursErr, theirsErr)
		}
	}
}
