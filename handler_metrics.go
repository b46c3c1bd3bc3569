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
	// notification waiting for the handler.
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

// listenerMetrics are one handler's lag metrics. Without a provider they are
// no-ops, and enabled, the one place "metrics off" is decided, is false:
// callers consult it only to skip work that feeds the metrics alone (a
// clock read per delivered batch).
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
	if p == nil {
		return listenerMetrics{pending: noopMetric{}, oldestAge: noopMetric{}, collapses: noopMetric{}}
	}
	return listenerMetrics{
		enabled:   true,
		pending:   p.NewPendingNotificationsMetric(id, handler),
		oldestAge: p.NewOldestPendingAgeMetric(id, handler),
		collapses: p.NewBacklogCollapsesMetric(id, handler),
	}
}

// idle records an empty backlog.
func (m listenerMetrics) idle() {
	m.pending.Set(0)
	m.oldestAge.Set(0)
}
