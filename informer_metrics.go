package cache

import "sync"

// InformerMetricsProvider builds the metrics of an informer's queue and
// store. It is only asked for identities that are Reserved.
type InformerMetricsProvider interface {
	// NewQueuedItemMetric counts the deltas waiting in the queue.
	NewQueuedItemMetric(id InformerNameAndResource) GaugeMetric
	// NewProcessingLatencyMetric observes how long processing a pop took, in seconds.
	NewProcessingLatencyMetric(id InformerNameAndResource) HistogramMetric
	// NewStoreResourceVersionMetric tracks the store's last resource version.
	NewStoreResourceVersionMetric(id InformerNameAndResource) GaugeMetric
}

// noopMetric is every metric kind, discarding what it is told.
type noopMetric struct{}

func (noopMetric) Inc()            {}
func (noopMetric) Dec()            {}
func (noopMetric) Observe(float64) {}
func (noopMetric) Set(float64)     {}

// metricOff reports whether m discards what it is told: the one test for
// "metrics off", used to skip work that only feeds a metric.
func metricOff(m interface{}) bool {
	_, off := m.(noopMetric)
	return off
}

type noopInformerMetricsProvider struct{}

func (noopInformerMetricsProvider) NewQueuedItemMetric(InformerNameAndResource) GaugeMetric {
	return noopMetric{}
}

func (noopInformerMetricsProvider) NewProcessingLatencyMetric(InformerNameAndResource) HistogramMetric {
	return noopMetric{}
}

func (noopInformerMetricsProvider) NewStoreResourceVersionMetric(InformerNameAndResource) GaugeMetric {
	return noopMetric{}
}

var informerMetrics = struct {
	once     sync.Once
	provider InformerMetricsProvider
}{provider: noopInformerMetricsProvider{}}

// SetInformerMetricsProvider installs the process-wide provider used when an
// informer is not given one. Only the first call has an effect.
func SetInformerMetricsProvider(metricsProvider InformerMetricsProvider) {
	informerMetrics.once.Do(func() { informerMetrics.provider = metricsProvider })
}

// metricsProviderOr returns p, or the process-wide provider when p is nil.
func metricsProviderOr(p InformerMetricsProvider) InformerMetricsProvider {
	if p != nil {
		return p
	}
	return informerMetrics.provider
}

// queueMetrics are the metrics a queue updates; no-ops unless id is reserved.
type queueMetrics struct {
	queued  GaugeMetric
	latency HistogramMetric
}

func newQueueMetrics(id InformerNameAndResource, p InformerMetricsProvider) queueMetrics {
	if !id.Reserved() {
		return queueMetrics{queued: noopMetric{}, latency: noopMetric{}}
	}
	p = metricsProviderOr(p)
	return queueMetrics{queued: p.NewQueuedItemMetric(id), latency: p.NewProcessingLatencyMetric(id)}
}

// newStoreRVMetric returns the store resource-version gauge for id; a no-op
// unless id is reserved.
func newStoreRVMetric(id InformerNameAndResource, p InformerMetricsProvider) GaugeMetric {
	if !id.Reserved() {
		return noopMetric{}
	}
	return metricsProviderOr(p).NewStoreResourceVersionMetric(id)
}
