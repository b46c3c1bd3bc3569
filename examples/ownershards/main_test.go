package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Sharding Pods by their own UID leaves most ReplicaSets without some of their Pods; by their
// controller's UID every ReplicaSet is seen whole, and every object is held exactly once.
func TestOwnerShardsKeepReplicaSetsWithTheirPods(t *testing.T) {
	defer goleak.VerifyNone(t)
	cfg := config{replicas: 3, replicaSets: 60, podsPerSet: 3}
	rsServer, podServer, err := seed(cfg)
	require.NoError(t, err)
	for _, s := range strategies {
		views, err := viewsOf(context.Background(), cfg, s, rsServer, podServer)
		require.NoError(t, err)
		var total replicaView
		for _, v := range views {
			total.replicaSets += v.replicaSets
			total.complete += v.complete
			total.pods += v.pods
		}
		assert.Equal(t, 60, total.replicaSets, s.name)
		assert.Equal(t, 180, total.pods, "%s: every pod held exactly once", s.name)
		if s.name == "pods by their controller's UID" {
			assert.Equal(t, 60, total.complete, s.name)
		} else {
			assert.Less(t, total.complete, 30, "%s: most ReplicaSets miss a pod", s.name)
		}
	}
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), config{replicas: 2, replicaSets: 10, podsPerSet: 2}, &out))
	assert.Contains(t, out.String(), "with all their pods")
}

// The facts docs/SHARDING.md states about KEP-5866's hash on namespace names.
func TestSpreadOfNamespaceNames(t *testing.T) {
	sets := map[string][]string{}
	for _, s := range realisticNames() {
		sets[s.name] = s.values
	}
	assert.Equal(t, []int{4, 0}, perShard(sets["ns0..ns3"], 2), "ns0-ns3 share one of two shards")
	assert.Equal(t, []int{100, 0}, perShard(sets["ns0..ns99"], 2))
	assert.Equal(t, []int{0, 26}, perShard(sets["team-a..team-z"], 2))
	assert.Equal(t, []int{25, 25, 25, 25}, perQuantileShard(sets["ns0..ns99"], quantileBounds(sets["ns0..ns99"], 4)),
		"ranges split at the hashes' quantiles balance today's names")
	var out bytes.Buffer
	require.NoError(t, printSpread(&out, []int{2, 4, 8}))
	assert.Contains(t, out.String(), "| ns0..ns99 ")
}
