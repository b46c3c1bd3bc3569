// Package prometheus exports openinformer's metrics to Prometheus: the per-handler lag metrics
// (HandlerMetricsProvider), the informer queue and store metrics (InformerMetricsProvider) and
// the reflector metrics (MetricsProvider).
//
// It lives in its own module so that the cache module does not depend on the Prometheus client.
//
//	m := prometheus.New(registry) // for example controller-runtime's metrics.Registry
//	m.Install()                   // process-wide providers, before informers are built
//
// Names follow Prometheus and Kubernetes conventions. The informer and reflector metrics have
// the names and labels k8s.io/component-base gives client-go's (informer_queued_items,
// informer_processing_latency_seconds, informer_store_resource_version with name, group,
// version and resource; reflector_*_total and friends with name), so dashboards built for
// client-go keep working. The handler metrics are openinformer's own:
//
//   - openinformer_handler_pending_notifications: notifications waiting for the handler;
//   - openinformer_handler_oldest_pending_notification_age_seconds: how long the oldest waited;
//   - openinformer_handler_backlog_collapses_total: how often the backlog hit its bound.
//
// They carry the informer's labels plus handler, so they join with the informer metrics.
// openinformer_informer_object_errors_total (informer labels) counts the objects an informer
// could not cache as given because a key, transform or index function failed on them; every
// other object is still cached.
// SnapshotMetrics(id) is an informer's SnapshotOptions.Metrics: its snapshots' save duration,
// size, object count, time and failures (openinformer_snapshot_*), and its starts by outcome
// (openinformer_informer_restarts_total: "synced" or the fallback's reason).
// Informers only report metrics for a reserved InformerNameAndResource (set
// SharedIndexInformerOptions.Identifier); handler metrics are reported for every informer.
// Each metric family is registered on first use, so a registry shows only what is in use.
package prometheus
