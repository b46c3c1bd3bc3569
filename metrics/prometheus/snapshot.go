package prometheus

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	cache "github.com/openinformer/cache"
)

// restartLabels are the informer's labels plus how its start ended.
var restartLabels = append(append([]string{}, informerLabels...), "outcome")

// saveBuckets span a snapshot's save: milliseconds for a few objects,
// seconds to a minute for 100k on a slow disk (docs/RESTART.md).
var saveBuckets = prometheus.ExponentialBuckets(0.005, 2, 15)

// SnapshotMetrics returns the warm-restart metrics (docs/RESTART.md) of the
// informer id names, for its SnapshotOptions.Metrics:
//
//   - openinformer_snapshot_save_duration_seconds: each snapshot's freeze, walk, write and sync;
//   - openinformer_snapshot_size_bytes, openinformer_snapshot_objects: the last snapshot's;
//   - openinformer_snapshot_last_save_timestamp_seconds: when the last one was frozen (its age
//     is time() minus it);
//   - openinformer_snapshot_save_failures_total: snapshots not saved;
//   - openinformer_informer_restarts_total, with outcome "synced" (warm) or the fallback's
//     reason as logged ("no snapshot" for a first start).
//
// They carry the informer metrics' labels, so they join with them.
func (m *Metrics) SnapshotMetrics(id cache.InformerNameAndResource) cache.SnapshotMetrics {
	values := informerLabelValues(id)
	return &snapshotMetrics{
		m: m, values: values,
		took: m.histogram(prometheus.HistogramOpts{Namespace: "openinformer", Subsystem: "snapshot", Name: "save_duration_seconds",
			Help: "Time to freeze, write and sync a snapshot of the informer's cache.", Buckets: saveBuckets}, informerLabels, values...),
		bytes: m.gauge(prometheus.GaugeOpts{Namespace: "openinformer", Subsystem: "snapshot", Name: "size_bytes",
			Help: "Size on disk of the informer's last snapshot."}, informerLabels, values...),
		objects: m.gauge(prometheus.GaugeOpts{Namespace: "openinformer", Subsystem: "snapshot", Name: "objects",
			Help: "Objects in the informer's last snapshot."}, informerLabels, values...),
		at: m.gauge(prometheus.GaugeOpts{Namespace: "openinformer", Subsystem: "snapshot", Name: "last_save_timestamp_seconds",
			Help: "When the informer's last snapshot was frozen, in seconds since the epoch."}, informerLabels, values...),
		failed: m.counter(prometheus.CounterOpts{Namespace: "openinformer", Subsystem: "snapshot", Name: "save_failures_total",
			Help: "Snapshots of the informer's cache that could not be saved."}, informerLabels, values...),
	}
}

// snapshotMetrics is one informer's cache.SnapshotMetrics.
type snapshotMetrics struct {
	m                  *Metrics
	values             []string
	took               prometheus.Observer
	bytes, objects, at prometheus.Gauge
	failed             prometheus.Counter
}

func (s *snapshotMetrics) ObserveSnapshotSaved(took time.Duration, bytes int64, objects int, at time.Time) {
	s.took.Observe(took.Seconds())
	s.bytes.Set(float64(bytes))
	s.objects.Set(float64(objects))
	s.at.Set(float64(at.UnixNano()) / 1e9)
}

func (s *snapshotMetrics) ObserveSnapshotFailed() { s.failed.Inc() }

// ObserveRestart counts the outcome; its counter is made on first use, so
// only outcomes that happened are exported.
func (s *snapshotMetrics) ObserveRestart(outcome string) {
	s.m.counter(prometheus.CounterOpts{Namespace: "openinformer", Subsystem: "informer", Name: "restarts_total",
		Help: "Starts of the informer, by outcome: synced from its snapshot, or the reason it synced from the server."},
		restartLabels, append(append([]string{}, s.values...), outcome)...).Inc()
}
