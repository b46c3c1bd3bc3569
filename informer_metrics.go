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
	// objectErrors counts the objects refused for a failing key function
	// or transform.
	objectErrors CounterMetric
}

func newQueueMetrics(id InformerNameAndResource, p InformerMetricsProvider) queueMetrics {
	if !id.Reserved() {
		return queueMetrics{queued: noopMetric{}, latency: noopMetric{}, objectErrors: noopMetric{}}
	}
	p = metricsProviderOr(p)
	return queueMetrics{queued: p.NewQueuedItemMetric(id), latency: p.NewProcessingLatencyMetric(id), objectErrors: newObjectErrorMetric(id, p)}
}

// newStoreRVMetric returns the store resource-version gauge for id; a no-op
// unless id is reserved. With client-go v0.38 the provider is asked for it
// at the first Set, as client-go does there, so that no 0 series is
// published before the store holds a resource version; with v0.37 at once.
func newStoreRVMetric(id InformerNameAndResource, p InformerMetricsProvider) GaugeMetric {
	if !id.Reserved() {
		return noopMetric{}
	}
	p = metricsProviderOr(p)
	if clientGoV038 {
		return &lazyGauge{newGauge: func() GaugeMetric { return p.NewStoreResourceVersionMetric(id) }}
	}
	return p.NewStoreResourceVersionMetric(id)
}

// lazyGauge creates its gauge at the first Set.
type lazyGauge struct {
	once     sync.Once
	newGauge func() GaugeMetric
	gauge    GaugeMetric
}

// Set creates the gauge if need be and sets it.
func (g *lazyGauge) Set(v float64) {
	g.once.Do(func() { g.gauge = g.newGauge() })
	g.gauge.Set(v)
}

// ObjectErrorMetricsProvider is an optional extension of an
// InformerMetricsProvider (client-go's interface has no such method, so it
// is asked for by type assertion). Its counter counts, per informer, every
// object the informer could not cache as given: a key function, transform
// or index function that failed on it.
type ObjectErrorMetricsProvider interface {
	NewObjectErrorMetric(id InformerNameAndResource) CounterMetric
}

// newObjectErrorMetric returns the object-error counter for id; a no-op
// unless id is reserved and the provider offers the counter.
func newObjectErrorMetric(id InformerNameAndResource, p InformerMetricsProvider) CounterMetric {
	if !id.Reserved() {
		return noopMetric{}
	}
	if ep, ok := metricsProviderOr(p).(ObjectErrorMetricsProvider); ok {
		return ep.NewObjectErrorMetric(id)
	}
	return noopMetric{}
}
