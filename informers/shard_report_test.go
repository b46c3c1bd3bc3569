package informers

import (
	"testing"

	"github.com/openinformer/cache/sharding"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// Issue 39 item 6: WithShard takes a function, so a resource's shard
// exists only when its informer is built; that is when a malformed one is
// reported, once, before anything runs, naming the informer and the fault.
func TestMalformedShardReportedWhenTheInformerIsBuilt(t *testing.T) {
	defer goleak.VerifyNone(t)
	reported := reportedErrors(t)
	f := NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0, WithShard(func(obj runtime.Object) *sharding.Shard {
		if _, ok := obj.(*corev1.Pod); ok {
			return &sharding.Shard{Index: 3, Count: 2}
		}
		return nil
	}))
	require.Empty(t, *reported)
	f.Core().V1().Nodes().Informer()
	require.Empty(t, *reported, "a good shard says nothing")
	f.Core().V1().Pods().Informer()
	f.Core().V1().Pods().Informer() // shared: built once
	require.Len(t, *reported, 1)
	assert.ErrorContains(t, (*reported)[0], "informer for *v1.Pod: shard index 3 out of range for a shard count of 2")
}
