package cache

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"
)

type metricsTestGauge struct{ value float64 }

func (g *metricsTestGauge) Set(v float64)     { g.value = v }
func (g *metricsTestGauge) Observe(v float64) { g.value = v }

type metricsTestProvider struct{ asked []string }

func (p *metricsTestProvider) NewQueuedItemMetric(id InformerNameAndResource) GaugeMetric {
	p.asked = append(p.asked, "queued:"+id.Name())
	return &metricsTestGauge{}
}

func (p *metricsTestProvider) NewProcessingLatencyMetric(id InformerNameAndResource) HistogramMetric {
	p.asked = append(p.asked, "latency:"+id.Name())
	return &metricsTestGauge{}
}

func (p *metricsTestProvider) NewStoreResourceVersionMetric(id InformerNameAndResource) GaugeMetric {
	p.asked = append(p.asked, "rv:"+id.Name())
	return &metricsTestGauge{}
}

func TestM9_MetricsOnlyForReservedIdentities(t *testing.T) {
	t.Cleanup(ResetInformerNamesForTesting)
	p := &metricsTestProvider{}

	m := newQueueMetrics(InformerNameAndResource{}, p)
	assert.Equal(t, noopMetric{}, m.queued)
	assert.Equal(t, noopMetric{}, newStoreRVMetric(InformerNameAndResource{}, p))
	assert.Empty(t, p.asked, "an unreserved identity must not reach the provider")

	n, err := NewInformerName("metrics")
	require.NoError(t, err)
	id := n.WithResource(identityPodsGVR)
	newQueueMetrics(id, p)
	rv := newStoreRVMetric(id, p)
	rv.Set(1)
	assert.Equal(t, []string{"queued:metrics", "latency:metrics", "rv:metrics"}, p.asked)
}

// The store-RV gauge is created as the client-go built against creates it:
// at construction with v0.37, at the first Set with v0.38 (no 0 series
// before the first sync). Both informers run on the same client-go.
func TestStoreRVMetricCreatedWhenClientGoCreatesIt(t *testing.T) {
	t.Cleanup(ResetInformerNamesForTesting)
	lw := ToListWatcherWithWatchListSemantics(&ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}, Items: shardPods(3)}, nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}, fakeNoWatchListClient{})
	run := func(inf interface {
		RunWithContext(context.Context)
		HasSynced() bool
	}, p *metricsTestProvider) (before, after []string) {
		before = slices.Clone(p.asked)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced))
		cancel()
		<-done
		return before, slices.Clone(p.asked)
	}
	ourName, err := NewInformerName("rv-ours")
	require.NoError(t, err)
	ours := &metricsTestProvider{}
	ourBefore, ourAfter := run(NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, SharedIndexInformerOptions{
		Identifier: ourName.WithResource(identityPodsGVR), InformerMetricsProvider: ours}), ours)

	theirName, err := clientcache.NewInformerName("rv-theirs")
	require.NoError(t, err)
	defer theirName.Release()
	theirs := &metricsTestProvider{}
	theirBefore, theirAfter := run(clientcache.NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, clientcache.SharedIndexInformerOptions{
		Identifier: theirName.WithResource(identityPodsGVR), InformerMetricsProvider: clientGoMetricsTestProvider{theirs}}), theirs)

	rvOnly := func(asked []string) (n int) {
		for _, a := range asked {
			if strings.HasPrefix(a, "rv:") {
				n++
			}
		}
		return n
	}
	assert.Equal(t, rvOnly(theirBefore), rvOnly(ourBefore), "before Run")
	assert.Equal(t, rvOnly(theirAfter), rvOnly(ourAfter), "after the sync")
	assert.Equal(t, 1, rvOnly(ourAfter))
	assert.Equal(t, !clientGoV038, rvOnly(ourBefore) == 1)
}

func TestM9_NilProviderFallsBackToGlobal(t *testing.T) {
	assert.Equal(t, informerMetrics.provider, metricsProviderOr(nil))
	p := &metricsTestProvider{}
	assert.Same(t, p, metricsProviderOr(p))
}

// clientGoMetricsTestProvider is metricsTestProvider for client-go's
// informers, whose identities are client-go's type.
type clientGoMetricsTestProvider struct{ *metricsTestProvider }

func (p clientGoMetricsTestProvider) NewQueuedItemMetric(id clientcache.InformerNameAndResource) clientcache.GaugeMetric {
	p.asked = append(p.asked, "queued:"+id.Name())
	return &metricsTestGauge{}
}

func (p clientGoMetricsTestProvider) NewProcessingLatencyMetric(id clientcache.InformerNameAndResource) clientcache.HistogramMetric {
	p.asked = append(p.asked, "latency:"+id.Name())
	return &metricsTestGauge{}
}

func (p clientGoMetricsTestProvider) NewStoreResourceVersionMetric(id clientcache.InformerNameAndResource) clientcache.GaugeMetric {
	p.asked = append(p.asked, "rv:"+id.Name())
	return &metricsTestGauge{}
}
