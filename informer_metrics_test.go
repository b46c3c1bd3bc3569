package cache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	newStoreRVMetric(id, p)
	assert.Equal(t, []string{"queued:metrics", "latency:metrics", "rv:metrics"}, p.asked)
}

func TestM9_NilProviderFallsBackToGlobal(t *testing.T) {
	assert.Equal(t, informerMetrics.provider, metricsProviderOr(nil))
	p := &metricsTestProvider{}
	assert.Same(t, p, metricsProviderOr(p))
}
