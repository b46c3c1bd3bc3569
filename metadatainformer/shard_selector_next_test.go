//go:build clientgo_v038

package metadatainformer

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
	clientmetadatainformer "k8s.io/client-go/metadata/metadatainformer"
)

// client-go v0.38's metadata factory with WithShardSelector is the oracle:
// the same objects cached for a selector, the same one when an informer's
// SetShardSelector conflicts with the factory's before Start, and the same
// refusal after it.
func TestWithShardSelectorMatchesClientGo(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, prepare := range []func(*testing.T, clientmetadatainformer.SharedInformerFactory){nil, setHighHalf} {
		client, _ := shardClient(t, lowHalf)
		ours, oursErr := cachedKeys(t, NewSharedInformerFactoryWithOptions(client, 0, WithShardSelector(lowHalf)), prepare)
		client, _ = shardClient(t, lowHalf)
		theirs, theirsErr := cachedKeys(t, clientmetadatainformer.NewSharedInformerFactoryWithOptions(client, 0, clientmetadatainformer.WithShardSelector(lowHalf)), prepare)
		assertKeys(t, theirs, ours)
		if fmt.Sprint(oursErr) != fmt.Sprint(theirsErr) {
			t.Errorf("SetShardSelector after Start: ours %v, client-go %v", oursErr, theirsErr)
		}
	}
}
