package prometheus

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	cache "github.com/openinformer/cache"
)

// podsID reserves the identity "pods-informer" for pods until the test ends.
func podsID(t *testing.T) cache.InformerNameAndResource {
	name, err := cache.NewInformerName("pods-informer")
	require.NoError(t, err)
	t.Cleanup(name.Release)
	return name.WithResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
}

func TestHandlerMetricsHaveNamesLabelsAndValues(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := New(reg)
	id := podsID(t)

	m.NewPendingNotificationsMetric(id, "enqueue").Set(3)
	m.NewOldestPendingAgeMetric(id, "enqueue").Set(1.5)
	collapses := m.NewBacklogCollapsesMetric(id, "enqueue")
	collapses.Inc()
	collapses.Inc()
	m.NewPendingNotificationsMetric(id, "audit").Set(0)

	want := `
# HELP openinformer_handler_backlog_collapses_total Times the event handler's backlog reached its bound and was collapsed into a resync.
# TYPE openinformer_handler_backlog_collapses_total counter
openinformer_handler_backlog_collapses_total{group="",handler="enqueue",name="pods-informer",resource="pods",version="v1"} 2
# HELP openinformer_handler_oldest_pending_notification_age_seconds Age of the oldest notification the event handler has not finished, the one it is handling included.
# TYPE openinformer_handler_oldest_pending_notification_age_seconds gauge
openinformer_handler_oldest_pending_notification_age_seconds{group="",handler="enqueue",name="pods-informer",resource="pods",version="v1"} 1.5
# HELP openinformer_handler_pending_notifications Number of notifications waiting for the event handler (for a collapsed backlog, keys to resync).
# TYPE openinformer_handler_pending_notifications gauge
openinformer_handler_pending_notifications{group="",handler="audit",name="pods-informer",resource="pods",version="v1"} 0
openinformer_handler_pending_notifications{group="",handler="enqueue",name="pods-informer",resource="pods",version="v1"} 3
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want)))
}

func TestInformerMetricsMatchComponentBase(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := New(reg)
	id := podsID(t)

	m.NewQueuedItemMetric(id).Set(7)
	m.NewStoreResourceVersionMetric(id).Set(12345)
	m.NewProcessingLatencyMetric(id).Observe(0.02)

	want := `
# HELP informer_queued_items Number of items currently queued in the FIFO.
# TYPE informer_queued_items gauge
informer_queued_items{group="",name="pods-informer",resource="pods",version="v1"} 7
# HELP informer_store_resource_version The 15 least significant digits of the resource version of the store.
# TYPE informer_store_resource_version gauge
informer_store_resource_version{group="",name="pods-informer",resource="pods",version="v1"} 12345
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "informer_queued_items", "informer_store_resource_version"))
	n, err := testutil.GatherAndCount(reg, "informer_processing_latency_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

func TestObjectErrorsAreCounted(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	var provider cache.InformerMetricsProvider = New(reg)
	ep, ok := provider.(cache.ObjectErrorMetricsProvider)
	require.True(t, ok, "the adapter offers the optional object-error counter")
	c := ep.NewObjectErrorMetric(podsID(t))
	c.Inc()
	c.Inc()

	want := `
# HELP openinformer_informer_object_errors_total Objects the informer could not cache as given: a key, transform or index function failed on them.
# TYPE openinformer_informer_object_errors_total counter
openinformer_informer_object_errors_total{group="",name="pods-informer",resource="pods",version="v1"} 2
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "openinformer_informer_object_errors_total"))
}

func TestReflectorMetricsUseTheHistoricalNames(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := New(reg)
	m.NewListsMetric("pods").Inc()
	m.NewWatchesMetric("pods").Inc()
	m.NewShortWatchesMetric("pods").Inc()
	m.NewListDurationMetric("pods").Observe(0.5)
	m.NewItemsInListMetric("pods").Observe(10)
	m.NewWatchDurationMetric("pods").Observe(300)
	m.NewItemsInWatchMetric("pods").Observe(4)
	m.NewLastResourceVersionMetric("pods").Set(42)

	want := `
# HELP reflector_lists_total Total number of API lists done by the reflectors.
# TYPE reflector_lists_total counter
reflector_lists_total{name="pods"} 1
# HELP reflector_last_resource_version Last resource version seen for the reflectors.
# TYPE reflector_last_resource_version gauge
reflector_last_resource_version{name="pods"} 42
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "reflector_lists_total", "reflector_last_resource_version"))
	families, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	assert.ElementsMatch(t, []string{
		"reflector_lists_total", "reflector_watches_total", "reflector_short_watches_total",
		"reflector_list_duration_seconds", "reflector_items_per_list", "reflector_watch_duration_seconds",
		"reflector_items_per_watch", "reflector_last_resource_version",
	}, names)
}

// Two adapters on one registry, or a collector registered by hand first, share the family
// instead of failing registration.
func TestAdaptersShareARegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	New(reg).NewListsMetric("a").Inc()
	New(reg).NewListsMetric("a").Inc()
	assert.Equal(t, 2.0, testutil.ToFloat64(New(reg).NewListsMetric("a").(prometheus.Counter)))
}

// A registry only shows the families in use.
func TestFamiliesAreRegisteredOnFirstUse(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	New(reg)
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestSnapshotMetricsHaveNamesLabelsAndValues(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := New(reg)
	s := m.SnapshotMetrics(podsID(t))

	s.ObserveRestart("no snapshot")
	s.ObserveSnapshotSaved(1500*time.Millisecond, 2048, 10, time.Unix(1700000000, 500_000_000))
	s.ObserveSnapshotFailed()
	s.ObserveRestart(cache.RestartSynced)
	s.ObserveRestart(cache.RestartSynced)

	want := `
# HELP openinformer_informer_restarts_total Starts of the informer, by outcome: synced from its snapshot, or the reason it synced from the server.
# TYPE openinformer_informer_restarts_total counter
openinformer_informer_restarts_total{group="",name="pods-informer",outcome="no snapshot",resource="pods",version="v1"} 1
openinformer_informer_restarts_total{group="",name="pods-informer",outcome="synced",resource="pods",version="v1"} 2
# HELP openinformer_snapshot_last_save_timestamp_seconds When the informer's last snapshot was frozen, in seconds since the epoch.
# TYPE openinformer_snapshot_last_save_timestamp_seconds gauge
openinformer_snapshot_last_save_timestamp_seconds{group="",name="pods-informer",resource="pods",version="v1"} 1.7000000005e+09
# HELP openinformer_snapshot_objects Objects in the informer's last snapshot.
# TYPE openinformer_snapshot_objects gauge
openinformer_snapshot_objects{group="",name="pods-informer",resource="pods",version="v1"} 10
# HELP openinformer_snapshot_save_failures_total Snapshots of the informer's cache that could not be saved.
# TYPE openinformer_snapshot_save_failures_total counter
openinformer_snapshot_save_failures_total{group="",name="pods-informer",resource="pods",version="v1"} 1
# HELP openinformer_snapshot_size_bytes Size on disk of the informer's last snapshot.
# TYPE openinformer_snapshot_size_bytes gauge
openinformer_snapshot_size_bytes{group="",name="pods-informer",resource="pods",version="v1"} 2048
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"openinformer_informer_restarts_total", "openinformer_snapshot_last_save_timestamp_seconds", "openinformer_snapshot_objects",
		"openinformer_snapshot_save_failures_total", "openinformer_snapshot_size_bytes"))
	count, err := testutil.GatherAndCount(reg, "openinformer_snapshot_save_duration_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, count)
}
