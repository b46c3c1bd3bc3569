// Package prometheus exports openinformer's metrics to Prometheus: the per-handler lag metrics
// (HandlerMetricsProvider), the informer queue, store and state metrics
// (InformerMetricsProvider, InformerStateMetricsProvider) and the snapshot metrics
// (SnapshotMetrics). It also implements the reflector MetricsProvider, but, as in client-go
// v0.37.2, reflectors publish no metrics: no reflector_* series ever appears.
//
// It lives in its own module so that the cache module does not depend on the Prometheus client.
//
//	m := prometheus.New(registry) // for example controller-runtime's metrics.Registry
//	m.Install()                   // process-wide providers, before informers are built
//
// Names follow Prometheus and Kubernetes conventions. The informer queue and store metrics
// have the names and labels k8s.io/component-base gives client-go's (informer_queued_items,
// informer_processing_latency_seconds, informer_store_resource_version with name, group,
// version and resource), so dashboards built for client-go keep working. The handler metrics
// are openinformer's own:
//
//   - openinformer_handler_pending_notifications: notifications waiting for the handler;
//   - openinformer_handler_oldest_pending_notification_age_seconds: how long the oldest waited;
//   - openinformer_handler_backlog_collapses_total: how often the backlog hit its bound.
//
// They carry the informer's labels plus handler, so they join with the informer metrics.
// openinformer_informer_object_errors_total (informer labels) counts the objects an informer
// could not cache as given because a key, transform or index function failed on them; every
// other object is still cached.
//
// Three gauges describe each informer's state, read from it at scrape time (ObserveInformerState):
//
//   - openinformer_informer_synced: 1 once the cache holds its initial list, else 0;
//   - openinformer_informer_cached_objects: objects in the cache;
//   - openinformer_informer_last_event_age_seconds: seconds since the cache last applied a watch
//     event, a bookmark or a list (timed by the store's resource-version updates). A
//     kube-apiserver sends a watch a bookmark about every minute, so a value of several minutes
//     means the watch stalled. Absent before the first.
//
// A stopped informer's state series, or one whose identity was released, are dropped at the
// next scrape.
//
// SnapshotMetrics(id) is an informer's SnapshotOptions.Metrics: its snapshots' save duration,
// size, object count, time and failures (openinformer_snapshot_*), and its starts by outcome
// (openinformer_informer_restarts_total: "synced" or the fallback's reason).
// Informers only report informer and state metrics for a reserved InformerNameAndResource (set
// SharedIndexInformerOptions.Identifier, or a factory's WithInformerName); handler metrics are
// reported for every informer. There is one series per reserved identity (and handler), so
// cardinality is bounded by the informers a process runs. Each metric family is registered on
// first use, so a registry shows only what is in use.
package prometheus
