package dynamicinformer

import (
	"path/filepath"
	"testing"

	cache "github.com/openinformer/cache"
	build "github.com/openinformer/cache/internal/informerbuild"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
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
