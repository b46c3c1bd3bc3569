package prometheus

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/informers"
)

func stateTestPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

// stateGauges renders the three state gauges of the pods informer as the registry exposes them;
// age < 0 means the age series is absent.
func stateGauges(synced, objects int, age float64) string {
	const labels = `{group="",name="pods-informer",resource="pods",version="v1"}`
	out := fmt.Sprintf(`
# HELP openinformer_informer_cached_objects Objects in the informer's cache.
# TYPE openinformer_informer_cached_objects gauge
openinformer_informer_cached_objects%s %d
`, labels, objects)
	if age >= 0 {
		out += fmt.Sprintf(`# HELP openinformer_informer_last_event_age_seconds %s
# TYPE openinformer_informer_last_event_age_seconds gauge
openinformer_informer_last_event_age_seconds%s %g
`, "Seconds since the informer's cache last applied a watch event, a bookmark or a list. It keeps rising while a watch is stalled; absent until the first.", labels, age)
	}
	return out + fmt.Sprintf(`# HELP openinformer_informer_synced 1 when the informer's cache holds its initial list, else 0.
# TYPE openinformer_informer_synced gauge
openinformer_informer_synced%s %d
`, labels, synced)
}

var stateNames = []string{"openinformer_informer_synced", "openinformer_informer_cached_objects", "openinformer_informer_last_event_age_seconds"}

// The state gauges are read from the informer at each scrape: not synced and empty before it
// runs, then its synced cache and the time since it last applied something, rising while
// nothing arrives, back to 0 with the next event; gone once the informer stopped.
func TestInformerStateGauges(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := New(reg)
	var elapsed atomic.Int64
	start := time.Unix(1_000_000, 0)
	m.now = func() time.Time { return start.Add(time.Duration(elapsed.Load())) }

	srv := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: []runtime.Object{stateTestPod("a"), stateTestPod("b")}})
	informer := cache.NewSharedIndexInformerWithOptions(srv, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		Identifier: podsID(t), InformerMetricsProvider: m,
	})
	added := make(chan string, 10)
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) { added <- obj.(*corev1.Pod).Name }})
	require.NoError(t, err)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(stateGauges(0, 0, -1)), stateNames...))

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced))
	<-added
	<-added
	elapsed.Store(int64(90 * time.Second))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(stateGauges(1, 2, 90)), stateNames...))

	_, err = srv.Create(stateTestPod("c"))
	require.NoError(t, err)
	require.Equal(t, "c", <-added)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(stateGauges(1, 3, 0)), stateNames...))

	cancel()
	<-done
	n, err := testutil.GatherAndCount(reg, stateNames...)
	require.NoError(t, err)
	require.Zero(t, n, "a stopped informer's series are dropped")
}

// A factory given no informer name derives one once a provider is installed, so its informers
// publish metrics without the caller reserving a name: "informers" here. (Install is
// process-wide and permanent, so this test installs last in this package's files.)
func TestFactoryInformersPublishWithoutAName(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	New(reg).Install()
	pods := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: []runtime.Object{stateTestPod("a")}})
	factory := informers.NewSharedInformerFactory(fake.MustNewCluster(pods).Clientset(), 0)
	factory.Core().V1().Pods().Informer()
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); factory.Shutdown() }()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	const labels = `{group="",name="informers",resource="pods",version="v1"}`
	want := `
# HELP openinformer_informer_cached_objects Objects in the informer's cache.
# TYPE openinformer_informer_cached_objects gauge
openinformer_informer_cached_objects` + labels + ` 1
# HELP openinformer_informer_synced 1 when the informer's cache holds its initial list, else 0.
# TYPE openinformer_informer_synced gauge
openinformer_informer_synced` + labels + ` 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "openinformer_informer_synced", "openinformer_informer_cached_objects"))
}
