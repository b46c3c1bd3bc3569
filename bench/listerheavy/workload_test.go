package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/openinformer/cache/internal/fixtures"
)

// TestVariantsDoTheSameWork runs the controllers of each variant on a fake
// clientset of 400 pods: each syncs every service and ReplicaSet once
// (every pod's add enqueues both) and lists the same pods.
func TestVariantsDoTheSameWork(t *testing.T) {
	pods := fixtures.Pods(1, 400)
	for i, p := range pods {
		p.Namespace = namespaceName(i, 4)
	}
	var listed []int
	for _, variant := range []string{"client-go", "ours", "compact", "compact-keep"} {
		cs := fake.NewClientset(fixtures.Objects(pods)...)
		f, err := newFactory(variant, cs)
		require.NoError(t, err)
		w := &work{}
		c, reg, err := setUp(f, w)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		f.Start(ctx.Done())
		f.WaitForCacheSync(ctx.Done())
		require.Eventually(t, reg.HasSynced, 10*time.Second, 10*time.Millisecond)
		c.run(ctx)
		// 400 services and 400 ReplicaSets (one per deployment), plus the resync's services.
		require.Eventually(t, func() bool { return w.syncs.Load() >= 800 }, 30*time.Second, 10*time.Millisecond, variant)
		all, err := c.pods.List(labels.Everything())
		require.NoError(t, err)
		listed = append(listed, len(all))
		byNode, err := c.indexer.ByIndex(nodeIndex, pods[0].Spec.NodeName)
		require.NoError(t, err)
		require.NotEmpty(t, byNode, variant)
		cancel()
		f.Shutdown()
	}
	require.Equal(t, []int{400, 400, 400, 400}, listed)
}
