package cache

import (
	"sync"
	"time"

	"github.com/openinformer/cache/internal/fanout"
)

// DefaultSlowHandlerThreshold is a SlowHandlerThreshold for a controller
// that wants lagging handlers logged: a handler that keeps up never has a
// notification pending this long.
const DefaultSlowHandlerThreshold = 10 * time.Second

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

// listenerMetrics are one handler's lag metrics, from p or else the
// process-wide provider; no-ops without either.
func listenerMetrics(p HandlerMetricsProvider, id InformerNameAndResource, handler string) fanout.Metrics {
	if p == nil {
		p = handlerMetrics.provider
	}
	m := fanout.Metrics{Pending: noopMetric{}, OldestAge: noopMetric{}, Collapses: noopMetric{}}
	if p != nil {
		m.Pending = p.NewPendingNotificationsMetric(id, handler)
		m.OldestAge = p.NewOldestPendingAgeMetric(id, handler)
		m.Collapses = p.NewBacklogCollapsesMetric(id, handler)
	}
	m.Enabled = !metricOff(m.OldestAge)
	return m
}
