package integration

import (
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/integration/apiserver"
)

// TestWarmRestartOfCustomResources: our informer syncs widgets, stops and
// saves its snapshot; widgets are updated, deleted and created while it is
// down, and others keep changing while it restarts. The restart makes no
// full LIST and no watch-list, its handler is never told of a version
// older than the server's at restart nor of a widget deleted while it was
// down, and its cache ends equal to client-go's cold sync and the server.
func TestWarmRestartOfCustomResources(t *testing.T) {
	expectOurGoroutinesGone(t)
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	client := srv.Dynamic()
	n := scaled(1000)
	keys := createWidgets(t, client, "warm", n)
	path := filepath.Join(t.TempDir(), "widgets.snap")

	cold := startCounted(t, srv, snapshotting(path))
	cold.stop()
	if cold.requests.counts()[fake.FullList]+cold.requests.counts()[fake.InitialWatch] == 0 {
		t.Fatal("the first start made no full sync: the request log is blind")
	}

	down := changeWhileDown(t, client, keys, n/200) // 1% of the widgets change
	flow := startFlow(t, client, "flow", 20)
	warm := startCounted(t, srv, snapshotting(path))
	clientGo := startInformer(t, srv, implementations[0])
	flowWrites := flow()

	counts := warm.requests.counts()
	if counts[fake.FullList] != 0 || counts[fake.ListPage] != 0 || counts[fake.InitialWatch] != 0 || counts[fake.ProbeList] > 1 {
		t.Errorf("warm restart's requests %v: want no full LIST, no watch-list, at most one limit=1 probe", warm.requests.log())
	}
	want := waitConverged(t, client, []*informerRun{warm.informerRun, clientGo})
	checkListersAgree(t, []*informerRun{clientGo, warm.informerRun}, want)
	if d := warm.recorder.finalStateDiff(want); d != "" {
		t.Errorf("warm restart's handler: %s", d)
	}
	if p := warm.recorder.orderProblems(); len(p) != 0 {
		t.Errorf("warm restart's handler saw versions out of order: %v", p)
	}
	checkNothingOlderThanTheRestart(t, warm.recorder, down)
	t.Logf("warm restart: synced in %v (client-go cold %v) while %d writes flowed; read %d bytes, %.2f%% of the cold sync's %d; requests %v",
		warm.syncTime, clientGo.syncTime, flowWrites, warm.bytes.Load(), 100*float64(warm.bytes.Load())/float64(cold.bytes.Load()), cold.bytes.Load(), warm.requests.log())
}

// snapshotting is our compact informer saving its snapshot at path when it
// stops.
func snapshotting(path string) implementation {
	return implementation{name: "openinformer warm", newInformer: func(lw clientcache.ListerWatcher, obj runtime.Object, _ time.Duration, indexers clientcache.Indexers) clientcache.SharedIndexInformer {
		return cache.NewSharedIndexInformerWithOptions(lw, obj, cache.SharedIndexInformerOptions{
			Indexers: indexers,
			Compact:  &cache.CompactOptions{},
			// The ListWatch is built by hand, so the scope is given: every widget.
			Snapshot: &cache.SnapshotOptions{Path: path, Scope: &cache.SnapshotScope{}, Interval: -1},
		})
	}}
}
