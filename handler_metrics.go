package cache

import "sync"

// HandlerMetricsProvider builds the per-handler lag metrics of shared
// informers. id is the informer's identity (possibly unreserved and empty)
// and handler the handler's name, as used in log messages.
type HandlerMetricsProvider interface {
	// NewPendingNotificationsMetric tracks how many notifications wait for
	// the handler (for a collapsed backlog: how many keys are to be resynced).
	NewPendingNotificationsMetric(id InformerNameAndResource, handler string) GaugeMetric
	// NewOldestPendingAgeMetric tracks the age in seconds of the oldest
	// notification the handler has not finished: the one it is in, else
	// the oldest waiting. It is brought up to date every second, so it
	// keeps rising while a handler is stuck in one call.
	NewOldestPendingAgeMetric(id InformerNameAndResource, handler string) GaugeMetric
	// NewBacklogCollapsesMetric counts how often the handler's backlog hit
	// its bound and was collapsed into a resync.
	NewBacklogCollapsesMetric(id InformerNameAndResource, handler string) CounterMetric
}

var handlerMetrics struct {
	once     sync.Once
	provider HandlerMetricsProvider
}

// SetHandlerMetricsProvider installs the process-wide HandlerMetricsProvider
// for informers whose options name none. Only the first call has an effect.
func SetHandlerMetricsProvider(p HandlerMetricsProvider) {
	handlerMetrics.once.Do(func() { handlerMetrics.provider = p })
}

// listenerMetrics are one handler's lag metrics, no-ops without a provider.
// enabled is false when the age metric is off (metricOff): the clock read
// per delivered batch and the lag refresher that feed that metric are then
// skipped.
type listenerMetrics struct {
	enabled   bool
	pending   GaugeMetric
	oldestAge GaugeMetric
	collapses CounterMetric
}

func newListenerMetrics(p HandlerMetricsProvider, id InformerNameAndResource, handler string) listenerMetrics {
	if p == nil {
		p = handlerMetrics.provider
	}
	m := listenerMetrics{pending: noopMetric{}, oldestAge: noopMetric{}, collapses: noopMetric{}}
	if p != nil {
		m.pending = p.NewPendingNotificationsMetric(id, handler)
		m.oldestAge = p.NewOldestPendingAgeMetric(id, handler)
		m.collapses = p.NewBacklogCollapsesMetric(id, handler)
	}
	m.enabled = !metricOff(m.oldestAge)
	return m
}

// idle records an empty backlog.
func (m listenerMetrics) idle() {
	m.pending.Set(0)
	m.oldestAge.Set(0)
}
