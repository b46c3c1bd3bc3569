package prometheus

import (
	"github.com/prometheus/client_golang/prometheus"

	cache "github.com/openinformer/cache"
)

// Each provider method below is one metric: adding a metric is adding one method.

// NewPendingNotificationsMetric is openinformer_handler_pending_notifications.
func (m *Metrics) NewPendingNotificationsMetric(id cache.InformerNameAndResource, handler string) cache.GaugeMetric {
	return m.gauge(prometheus.GaugeOpts{Namespace: "openinformer", Subsystem: "handler", Name: "pending_notifications",
		Help: "Number of notifications waiting for the event handler (for a collapsed backlog, keys to resync)."},
		handlerLabels, handlerLabelValues(id, handler)...)
}

// NewOldestPendingAgeMetric is openinformer_handler_oldest_pending_notification_age_seconds.
func (m *Metrics) NewOldestPendingAgeMetric(id cache.InformerNameAndResource, handler string) cache.GaugeMetric {
	return m.gauge(prometheus.GaugeOpts{Namespace: "openinformer", Subsystem: "handler", Name: "oldest_pending_notification_age_seconds",
		Help: "Age of the oldest notification the event handler has not finished, the one it is handling included."},
		handlerLabels, handlerLabelValues(id, handler)...)
}

// NewBacklogCollapsesMetric is openinformer_handler_backlog_collapses_total.
func (m *Metrics) NewBacklogCollapsesMetric(id cache.InformerNameAndResource, handler string) cache.CounterMetric {
	return m.counter(prometheus.CounterOpts{Namespace: "openinformer", Subsystem: "handler", Name: "backlog_collapses_total",
		Help: "Times the event handler's backlog reached its bound and was collapsed into a resync."},
		handlerLabels, handlerLabelValues(id, handler)...)
}

// NewQueuedItemMetric is informer_queued_items, as in k8s.io/component-base.
func (m *Metrics) NewQueuedItemMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	return m.gauge(prometheus.GaugeOpts{Subsystem: "informer", Name: "queued_items",
		Help: "Number of items currently queued in the FIFO."},
		informerLabels, informerLabelValues(id)...)
}

// NewProcessingLatencyMetric is informer_processing_latency_seconds, as in k8s.io/component-base.
func (m *Metrics) NewProcessingLatencyMetric(id cache.InformerNameAndResource) cache.HistogramMetric {
	return m.histogram(prometheus.HistogramOpts{Subsystem: "informer", Name: "processing_latency_seconds",
		Help:    "Time taken to process events after popping from the queue.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}},
		informerLabels, informerLabelValues(id)...)
}

// NewStoreResourceVersionMetric is informer_store_resource_version, as in k8s.io/component-base.
// The store sets it on every watch event, bookmark and list it applies, so it also times
// openinformer_informer_last_event_age_seconds.
func (m *Metrics) NewStoreResourceVersionMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	g := m.gauge(prometheus.GaugeOpts{Subsystem: "informer", Name: "store_resource_version",
		Help: "The 15 least significant digits of the resource version of the store."},
		informerLabels, informerLabelValues(id)...)
	return stampedGauge{Gauge: g, now: m.now, at: m.states().lastEvent(id)}
}

// NewObjectErrorMetric is openinformer_informer_object_errors_total: objects
// the informer could not cache as given (a key, transform or index function
// failed on them). Every other object is still cached; see the cache
// package's ObjectErrorMetricsProvider.
func (m *Metrics) NewObjectErrorMetric(id cache.InformerNameAndResource) cache.CounterMetric {
	return m.counter(prometheus.CounterOpts{Namespace: "openinformer", Subsystem: "informer", Name: "object_errors_total",
		Help: "Objects the informer could not cache as given: a key, transform or index function failed on them."},
		informerLabels, informerLabelValues(id)...)
}

// NewListsMetric is reflector_lists_total.
func (m *Metrics) NewListsMetric(name string) cache.CounterMetric {
	return m.reflectorCounter("lists_total", "Total number of API lists done by the reflectors.", name)
}

// NewListDurationMetric is reflector_list_duration_seconds.
func (m *Metrics) NewListDurationMetric(name string) cache.SummaryMetric {
	return m.reflectorSummary("list_duration_seconds", "How long an API list takes to return and decode for the reflectors.", name)
}

// NewItemsInListMetric is reflector_items_per_list.
func (m *Metrics) NewItemsInListMetric(name string) cache.SummaryMetric {
	return m.reflectorSummary("items_per_list", "How many items an API list returns to the reflectors.", name)
}

// NewWatchesMetric is reflector_watches_total.
func (m *Metrics) NewWatchesMetric(name string) cache.CounterMetric {
	return m.reflectorCounter("watches_total", "Total number of API watches done by the reflectors.", name)
}

// NewShortWatchesMetric is reflector_short_watches_total.
func (m *Metrics) NewShortWatchesMetric(name string) cache.CounterMetric {
	return m.reflectorCounter("short_watches_total", "Total number of short API watches done by the reflectors.", name)
}

// NewWatchDurationMetric is reflector_watch_duration_seconds.
func (m *Metrics) NewWatchDurationMetric(name string) cache.SummaryMetric {
	return m.reflectorSummary("watch_duration_seconds", "How long an API watch takes to return and decode for the reflectors.", name)
}

// NewItemsInWatchMetric is reflector_items_per_watch.
func (m *Metrics) NewItemsInWatchMetric(name string) cache.SummaryMetric {
	return m.reflectorSummary("items_per_watch", "How many items an API watch returns to the reflectors.", name)
}

// NewLastResourceVersionMetric is reflector_last_resource_version.
func (m *Metrics) NewLastResourceVersionMetric(name string) cache.GaugeMetric {
	return m.gauge(prometheus.GaugeOpts{Subsystem: "reflector", Name: "last_resource_version",
		Help: "Last resource version seen for the reflectors."}, reflectorLabel, name)
}

// reflectorCounter and reflectorSummary are the reflector metric families, labelled by the
// reflector's name as client-go's reflector metrics were.
func (m *Metrics) reflectorCounter(metric, help, name string) cache.CounterMetric {
	return m.counter(prometheus.CounterOpts{Subsystem: "reflector", Name: metric, Help: help}, reflectorLabel, name)
}

func (m *Metrics) reflectorSummary(metric, help, name string) cache.SummaryMetric {
	return m.summary(prometheus.SummaryOpts{Subsystem: "reflector", Name: metric, Help: help}, reflectorLabel, name)
}
