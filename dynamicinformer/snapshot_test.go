package dynamicinformer

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"

	cache "github.com/openinformer/cache"
	build "github.com/openinformer/cache/internal/informerbuild"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	ofake "github.com/openinformer/cache/fake"
)

// WithSnapshots gives each resource's informer its own file in the
// directory, named for the resource and the factory's scope; a
// WithInformerOptions function sees it and may turn it off.
func TestWithSnapshotsGivesEachInformerItsFile(t *testing.T) {
	defer goleak.VerifyNone(t)
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{deployments: "DeploymentList", widgets: "WidgetList"})
	dir := t.TempDir()
	got := map[schema.GroupVersionResource]*cache.SnapshotOptions{}
	f := NewDynamicSharedInformerFactoryWithOptions(client, 0,
		WithNamespace("ns"),
		WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=x" }),
		WithSnapshots(dir, "v1"),
		WithInformerOptions(func(gvr schema.GroupVersionResource, opts *cache.SharedIndexInformerOptions) {
			got[gvr] = opts.Snapshot
			if gvr == widgets {
				opts.Snapshot = nil
			}
		}))
	f.ForResource(deployments)
	f.ForResource(widgets)
	scope := cache.SnapshotScope{Namespace: "ns", FieldSelector: "metadata.name=x"}
	for _, gvr := range []schema.GroupVersionResource{deployments, widgets} {
		want := filepath.Join(dir, build.SnapshotFileName(gvr, scope, "", "v1"))
		if s := got[gvr]; s == nil || s.Path != want || *s.Scope != scope || s.Version != "v1" {
			t.Errorf("%v: snapshot %+v, want path %q scope %+v version v1", gvr, s, want, scope)
		}
	}
}

// A resource's informer saves its file when the factory shuts down, and
// the next factory's informer restarts from it without a full sync. The
// factory lists one namespace: client-go's fake drops the options of a
// cluster-wide list (NewRootListActionWithOptions), the probe's limit
// among them, which the fake server would count as a full list.
func TestWithSnapshotsRestartsWarm(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	// No request fails, so apimachinery's error reporting, unsafe in a
	// bubble (fake.PrepareForSynctest), is never called.
	synctest.Test(t, func(t *testing.T) {
		srv := ofake.MustNew(ofake.Options{GroupVersionKind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}})
		for start := range 2 {
			if _, err := srv.Create(deployment(fmt.Sprintf("d%d", start))); err != nil {
				t.Fatal(err)
			}
			srv.ResetRequests()
			f := NewDynamicSharedInformerFactoryWithOptions(deploymentsOn(srv), 0, WithNamespace("ns"), WithSnapshots(dir, ""))
			gi := f.ForResource(deployments)
			ctx, cancel := context.WithCancel(context.Background())
			f.Start(ctx.Done())
			if synced := f.WaitForCacheSync(ctx.Done()); !synced[deployments] {
				t.Fatalf("start %d: not synced", start)
			}
			if got, err := gi.Lister().List(labels.Everything()); err != nil || len(got) != start+1 {
				t.Errorf("start %d: lister has %d deployments (%v), want %d", start, len(got), err, start+1)
			}
			cancel()
			f.Shutdown()
			if full := srv.RequestCounts().FullSyncs(); start == 1 && full != 0 {
				t.Errorf("the restart made %d full syncs: %+v", full, srv.Requests())
			}
		}
	})
}

func deployment(name string) *unstructured.Unstructured {
	d := &unstructured.Unstructured{}
	d.SetAPIVersion("apps/v1")
	d.SetKind("Deployment")
	d.SetNamespace("ns")
	d.SetName(name)
	return d
}

// deploymentsOn is a dynamic client whose deployment lists and watches go
// to srv.
func deploymentsOn(srv *ofake.Server) *dynamicfake.FakeDynamicClient {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{deployments: "DeploymentList"})
	client.PrependReactor("list", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		list, err := srv.List(action.(clienttesting.ListActionImpl).ListOptions)
		return true, list, err
	})
	client.PrependWatchReactor("deployments", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := srv.Watch(action.(clienttesting.WatchActionImpl).ListOptions)
		return true, w, err
	})
	return client
}
