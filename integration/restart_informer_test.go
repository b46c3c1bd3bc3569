package integration

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
)

// TestWarmRestartOfCustomResources: our informer syncs widgets, stops and
// saves its snapshot; widgets are updated, deleted and created while it is
// down, and others keep changing while it restarts. The restart makes no
// full LIST and no watch-list, its handler is never told of a version
// older than the server's at restart nor of a widget deleted while it was
// down, and its cache ends equal to client-go's cold sync and the server.
func TestWarmRestartOfCustomResources(t *testing.T) {
	scene := newRestartScene(t, "warm")
	srv, client := scene.srv, scene.client

	cold := startCounted(t, srv, snapshotting(scene.path))
	cold.stop()
	checkFullSync(t, cold.requests)

	down, flow := scene.whileDown(t)
	warm := startCounted(t, srv, snapshotting(scene.path))
	clientGo := startInformer(t, srv, implementations[0])
	flowWrites := flow()

	checkNoFullSync(t, "warm restart", warm.requests)
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
