package cache

import (
	"fmt"
	"sync"

	"github.com/openinformer/cache/compactstats"
)

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

// InformerStateMetricsProvider is an optional extension of an
// InformerMetricsProvider (asked for by type assertion, like
// ObjectErrorMetricsProvider). It is handed every informer with a reserved
// identity once, when the informer is built, and reads the informer's state
// when its metrics are collected: the informer does no work for these
// metrics between collections.
type InformerStateMetricsProvider interface {
	ObserveInformerState(id InformerNameAndResource, state InformerState)
}

// InformerState is what a metrics provider may read of an informer, from any
// goroutine, at any time.
type InformerState interface {
	// HasSynced reports whether the informer's cache holds its initial list.
	HasSynced() bool
	// IsStopped reports whether the informer has stopped.
	IsStopped() bool
	// CachedObjects is how many objects the informer's cache holds.
	CachedObjects() int
	// Storage is what the informer's compact storage holds and has done,
	// by tier; zero when it keeps objects decoded.
	Storage() compactstats.Stats
}

// observeInformerState hands s to the metrics provider when its identity is
// reserved and the provider reads informer state.
func observeInformerState(s *sharedIndexInformer) {
	if !s.identifier.Reserved() {
		return
	}
	if p, ok := metricsProviderOr(s.metricsProvider).(InformerStateMetricsProvider); ok {
		p.ObserveInformerState(s.identifier, informerState{s})
	}
}

// informerState is a sharedIndexInformer as InformerState.
type informerState struct{ s *sharedIndexInformer }

func (st informerState) HasSynced() bool { return st.s.HasSynced() }
func (st informerState) IsStopped() bool { return st.s.IsStopped() }

// CachedObjects counts without listing.
func (st informerState) CachedObjects() int { return st.s.indexer.storage.Len() }

// Storage reads the compact form's counters, kept as it works.
func (st informerState) Storage() compactstats.Stats { return st.s.indexer.storageStats() }

// NewDerivedInformerName reserves a name for informers whose builder was given none but
// knows what they are, such as a factory without WithInformerName, so that they publish
// metrics: base, or base-2, base-3, ... for the first one not in use. It returns nil (no
// name, no metrics) while no process-wide InformerMetricsProvider is installed: nothing would
// be published, and a reserved identity costs a clock read per queue pop.
func NewDerivedInformerName(base string) *InformerName {
	if _, off := metricsProviderOr(nil).(noopInformerMetricsProvider); off {
		return nil
	}
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		if n, err := NewInformerName(name); err == nil {
			return n
		}
	}
}

var reflectorMetrics = struct {
	once     sync.Once
	provider MetricsProvider
}{}

// SetReflectorMetricsProvider installs the process-wide provider of
// Reflector metrics. Only the first call has an effect. Like client-go
// v0.37.2, reflectors currently publish no metrics through it; it is kept so
// that code calling it compiles and behaves the same.
func SetReflectorMetricsProvider(metricsProvider MetricsProvider) {
	reflectorMetrics.once.Do(func() { reflectorMetrics.provider = metricsProvider })
}
