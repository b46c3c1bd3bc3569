package integration

import (
	"context"
	"flag"
	"io"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/features"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/integration/apiserver"
)

func TestMain(m *testing.M) {
	// The API server logs a lot; INTEGRATION_VERBOSE=1 shows it.
	if os.Getenv("INTEGRATION_VERBOSE") == "" {
		fs := flag.NewFlagSet("klog", flag.ExitOnError)
		klog.InitFlags(fs)
		for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
			if err := fs.Set(name, value); err != nil {
				panic(err)
			}
		}
		klog.SetOutput(io.Discard)
	}
	os.Exit(m.Run())
}

// scaled multiplies a workload size by INTEGRATION_SCALE (default 1).
func scaled(n int) int {
	if f, err := strconv.Atoi(os.Getenv("INTEGRATION_SCALE")); err == nil && f > 0 {
		return n * f
	}
	return n
}

var testNamespaces = []string{"alpha", "beta", "gamma"}

// TestConvergence: informers started before a concurrent workload see every
// write of every key, in order; informers started, and handlers added, while
// it runs see each key's changes in order from their first add on. All end
// equal to the server.
func TestConvergence(t *testing.T) {
	expectOurGoroutinesGone(t)
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	client := srv.Dynamic()
	early := startInformers(t, srv)
	if len(goroutinesMentioning(ourPackage)) == 0 {
		t.Error("no openinformer goroutine while informers run: the leak check is blind")
	}

	wl := workload{namespaces: testNamespaces, prefix: "conv", objects: scaled(300), writers: 6, updates: 2, deleteEvery: 4}
	writes := make(chan *writeLog, 1)
	go func() { writes <- wl.write(t, client) }()
	// Start the late informers once a third of the widgets exist.
	eventually(t, 2*time.Minute, "workload progress", func() (bool, string) {
		return early[0].recorder.keys() >= wl.objects/3, "too few widgets yet"
	})
	late := startInformers(t, srv)
	for _, run := range early {
		run.addLateHandler(t)
	}
	written := <-writes
	if t.Failed() {
		t.FailNow()
	}
	want := waitConverged(t, client, append(early, late...))

	for _, run := range early {
		missed := 0
		for key, rvs := range written.rvs {
			if seen := run.recorder.seenVersions(key); !slices.Equal(seen, rvs) {
				if missed++; missed <= 3 {
					t.Errorf("%s: %s saw versions %v, written %v", run.impl.name, key, seen, rvs)
				}
			}
		}
	}
	logLatencies(t, early, written)
	for _, run := range append(early, late...) {
		if tombstones := run.recorder.tombstones(); tombstones != 0 {
			t.Errorf("%s: %d tombstones without any relist", run.impl.name, tombstones)
		}
	}
	checkListersAgree(t, early, want)
	checkListersAgree(t, late, want)
	t.Logf("%d widgets live, %d written; API server start %v", len(want), len(written.rvs), srv.StartDurations)
}

// TestRelistAfterCompaction: watches are cut and held while the server
// changes and etcd is compacted, so the informer's next watch gets 410 Gone;
// it relists and converges without losing an update.
func TestRelistAfterCompaction(t *testing.T) {
	expectOurGoroutinesGone(t)
	srv := apiserver.Start(t, apiserver.Options{WatchCache: false})
	client := srv.Dynamic()
	workload{namespaces: testNamespaces, prefix: "before", objects: scaled(120), writers: 4, updates: 1}.run(t, client)
	runs := startInformers(t, srv)
	// An event on the current stream makes the cut look like a normal end
	// of watch, not a failed short one.
	waitAllSee(t, client, runs, "marker")

	releases := make([]func(), 0, len(runs))
	for _, run := range runs {
		releases = append(releases, run.probe.cutAndHold())
	}
	churn(t, client)
	workload{namespaces: testNamespaces, prefix: "during", objects: scaled(60), writers: 4, updates: 1, deleteEvery: 3}.run(t, client)
	rev := srv.Compact(context.Background())
	for _, release := range releases {
		release()
	}

	want := waitConverged(t, client, runs)
	for _, run := range runs {
		counts, gone := run.probe.snapshot()
		if gone == 0 {
			t.Errorf("%s never got 410 Gone (requests %v)", run.impl.name, counts)
		}
		if initial := counts[kindList] + counts[kindWatchList]; initial < 2 {
			t.Errorf("%s did not relist (requests %v)", run.impl.name, counts)
		}
		if run.recorder.tombstones() == 0 {
			t.Errorf("%s: deletes missed during the outage were not delivered as tombstones", run.impl.name)
		}
		t.Logf("%s: requests %v, 410s %d", run.impl.name, counts, gone)
	}
	checkListersAgree(t, runs, want)
	t.Logf("compacted at revision %d; %d widgets live", rev, len(want))
}

// TestStartPaths: watch-list streaming and list+watch fill the same cache.
func TestStartPaths(t *testing.T) {
	expectOurGoroutinesGone(t)
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	client := srv.Dynamic()
	workload{namespaces: testNamespaces, prefix: "start", objects: scaled(200), writers: 4, updates: 1, deleteEvery: 5}.run(t, client)
	want := serverState(t, client)

	for _, mode := range []struct {
		name      string
		watchList bool
	}{{"watch-list", true}, {"list-then-watch", false}} {
		t.Run(mode.name, func(t *testing.T) {
			setWatchListClient(t, mode.watchList)
			runs := startInformers(t, srv)
			for _, run := range runs {
				checkSyncedMeansComplete(t, run, want)
			}
			if got := waitConverged(t, client, runs); want.diff(got) != "" {
				t.Fatalf("server changed: %s", want.diff(got))
			}
			for _, run := range runs {
				counts, _ := run.probe.snapshot()
				streamed, listed := counts[kindWatchList] > 0, counts[kindList] > 0
				if streamed != mode.watchList || listed == mode.watchList {
					t.Errorf("%s: requests %v do not match the %s path", run.impl.name, counts, mode.name)
				}
				t.Logf("%s: requests %v, synced in %v", run.impl.name, counts, run.syncTime)
			}
			checkListersAgree(t, runs, want)
		})
	}
}

// checkSyncedMeansComplete: with no writes going on, a synced informer's
// store already holds the whole list, and once the handler's registration
// has synced the handler has been told about all of it.
func checkSyncedMeansComplete(t *testing.T, run *informerRun, want widgetState) {
	t.Helper()
	got, err := cacheState(run.informer)
	if err != nil {
		t.Fatal(err)
	}
	if d := want.diff(got); d != "" {
		t.Errorf("%s: store incomplete when HasSynced: %s", run.impl.name, d)
	}
	eventually(t, time.Minute, run.impl.name+" handler synced", func() (bool, string) {
		return run.handle.HasSynced(), "not synced"
	})
	if d := run.recorder.finalStateDiff(want); d != "" {
		t.Errorf("%s: handler incomplete when its registration HasSynced: %s", run.impl.name, d)
	}
}

// TestServerRestart: the API server stops under running informers and starts
// again on the same etcd; the informers recover and converge.
func TestServerRestart(t *testing.T) {
	expectOurGoroutinesGone(t)
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	client := srv.Dynamic()
	workload{namespaces: testNamespaces, prefix: "first", objects: scaled(100), writers: 4, updates: 1}.run(t, client)
	runs := startInformers(t, srv)
	waitConverged(t, client, runs)

	srv.StopAPIServer()
	srv.StartAPIServer()
	if err := apiserver.WaitServed(context.Background(), client); err != nil {
		t.Fatal(err)
	}
	churn(t, client)
	workload{namespaces: testNamespaces, prefix: "second", objects: scaled(100), writers: 4, updates: 1, deleteEvery: 3}.run(t, client)

	want := waitConverged(t, client, runs)
	for _, run := range runs {
		counts, gone := run.probe.snapshot()
		t.Logf("%s: requests %v, 410s %d", run.impl.name, counts, gone)
	}
	checkListersAgree(t, runs, want)
	t.Logf("API server starts %v, stop %v", srv.StartDurations, srv.StopDurations)
}

// waitAllSee creates a widget and waits until every informer's handler saw it.
func waitAllSee(t *testing.T, client dynamic.Interface, runs []*informerRun, name string) {
	t.Helper()
	created, err := client.Resource(apiserver.WidgetGVR).Namespace(testNamespaces[0]).
		Create(context.Background(), apiserver.NewWidget(testNamespaces[0], name, 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		eventually(t, time.Minute, run.impl.name+" sees "+name, func() (bool, string) {
			return len(run.recorder.seenVersions(widgetKey(created))) > 0, "not seen"
		})
	}
}

// churn updates every other live widget and deletes every third.
func churn(t *testing.T, client dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	list, err := client.Resource(apiserver.WidgetGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		obj := &list.Items[i]
		widgets := client.Resource(apiserver.WidgetGVR).Namespace(obj.GetNamespace())
		switch {
		case i%3 == 0:
			err = widgets.Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
		case i%2 == 0:
			value, _ := apiserver.WidgetValue(obj)
			if err = unstructured.SetNestedField(obj.Object, value+100, "spec", "value"); err == nil {
				_, err = widgets.Update(ctx, obj, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			t.Fatalf("churn %s: %v", widgetKey(obj), err)
		}
	}
}

// watchListGate overrides client-go's WatchListClient feature gate.
type watchListGate struct {
	features.Gates
	watchList bool
}

func (g watchListGate) Enabled(f features.Feature) bool {
	if f == features.WatchListClient {
		return g.watchList
	}
	return g.Gates.Enabled(f)
}

// setWatchListClient sets client-go's WatchListClient gate for the test.
// Reflectors read it when they are created, i.e. when an informer starts.
func setWatchListClient(t *testing.T, on bool) {
	original := features.FeatureGates()
	features.ReplaceFeatureGates(watchListGate{Gates: original, watchList: on})
	t.Cleanup(func() { features.ReplaceFeatureGates(original) })
}

// logLatencies prints, per informer, the time from sending a write to the
// handler's notification of it, and the ratios to the first informer.
func logLatencies(t *testing.T, runs []*informerRun, written *writeLog) {
	var ref [3]time.Duration
	for i, run := range runs {
		l := run.recorder.latencies(written)
		if len(l) == 0 {
			t.Errorf("%s: no latencies", run.impl.name)
			continue
		}
		q := [3]time.Duration{l[len(l)/2], l[len(l)*9/10], l[len(l)*99/100]}
		t.Logf("%s: write-to-handler latency over %d events: p50 %v, p90 %v, p99 %v", run.impl.name, len(l), q[0], q[1], q[2])
		if i == 0 {
			ref = q
			continue
		}
		t.Logf("%s/%s latency: p50 %.2f, p90 %.2f, p99 %.2f", run.impl.name, runs[0].impl.name,
			ratio(float64(q[0]), float64(ref[0])), ratio(float64(q[1]), float64(ref[1])), ratio(float64(q[2]), float64(ref[2])))
	}
}

// TestLabelSelectedInformer: an informer filtered on the server by a label
// selector follows widgets entering and leaving the selection (the server
// sends ADDED and DELETED for those) and ends equal to the selected list.
func TestLabelSelectedInformer(t *testing.T) {
	expectOurGoroutinesGone(t)
	const selector = "parity=0"
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	client := srv.Dynamic()
	workload{namespaces: testNamespaces, prefix: "sel", objects: scaled(150), writers: 4, updates: 1}.run(t, client)

	var runs []*informerRun
	for _, impl := range implementations {
		runs = append(runs, startInformerWith(t, srv, impl, informerSetup{labelSelector: selector}))
	}
	relabel(t, client)
	workload{namespaces: testNamespaces, prefix: "sel2", objects: scaled(60), writers: 4, updates: 1, deleteEvery: 3}.run(t, client)
	relabel(t, client)

	want := serverStateSelected(t, client, selector)
	waitConvergedTo(t, want, runs)
	for _, run := range runs {
		if run.recorder.keys() <= len(want) {
			t.Errorf("%s: handler heard of %d widgets, no more than the %d selected at the end: nothing left the selection", run.impl.name, run.recorder.keys(), len(want))
		}
	}
	checkListersAgree(t, runs, want)
}

// relabel flips the parity label of every third widget, moving it into or
// out of the parity=0 selection.
func relabel(t *testing.T, client dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	list, err := client.Resource(apiserver.WidgetGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if i%3 != 0 {
			continue
		}
		obj := &list.Items[i]
		labels := obj.GetLabels()
		labels["parity"] = map[string]string{"0": "1", "1": "0"}[labels["parity"]]
		obj.SetLabels(labels)
		if _, err := client.Resource(apiserver.WidgetGVR).Namespace(obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("relabel %s: %v", widgetKey(obj), err)
		}
	}
}
