//go:build clientgo_v038

package informers

import (
	"testing"

	"go.uber.org/goleak"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// client-go v0.38's typed factory with WithShardSelector is the oracle:
// its pod informer caches the same pods as ours for the selector.
func TestWithShardSelectorMatchesClientGo(t *testing.T) {
	defer goleak.VerifyNone(t)
	objs, _ := shardPods(t)
	var ours, theirs []string
	t.Run("ours", func(t *testing.T) { // each factory shuts down at its subtest's end
		f := NewSharedInformerFactoryWithOptions(fake.NewClientset(objs...), 0, WithShardSelector(halfByUID))
		ours = syncedKeys(t, f, f.Core().V1().Pods().Informer())
	})
	t.Run("client-go", func(t *testing.T) {
		f := clientinformers.NewSharedInformerFactoryWithOptions(fake.NewClientset(objs...), 0, clientinformers.WithShardSelector(halfByUID))
		theirs = syncedKeys(t, f, f.Core().V1().Pods().Informer())
	})
	assertKeys(t, theirs, ours)
}
