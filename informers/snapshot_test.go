package informers

import (
	"path/filepath"
	"reflect"
	"testing"

	cache "github.com/openinformer/cache"
	build "github.com/openinformer/cache/internal/informerbuild"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

// WithSnapshots gives each built-in informer its own file in the directory,
// named for its resource and the factory's scope, before WithInformerOptions'
// functions run, which may change it.
func TestWithSnapshotsGivesEachInformerItsFile(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	got := map[string]*cache.SnapshotOptions{}
	f := NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0,
		WithNamespace("a"),
		WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "b=2,a=1" }),
		WithSnapshots(dir, "v7"),
		WithInformerOptions(func(obj runtime.Object, opts *cache.SharedIndexInformerOptions) {
			got[reflect.TypeOf(obj).Elem().Name()] = opts.Snapshot
		}))
	f.Core().V1().Pods().Informer()
	f.Apps().V1().Deployments().Informer()

	scope := cache.SnapshotScope{Namespace: "a", LabelSelector: "a=1,b=2"}
	for kind, gvr := range map[string]schema.GroupVersionResource{
		"Pod":        {Version: "v1", Resource: "pods"},
		"Deployment": {Group: "apps", Version: "v1", Resource: "deployments"},
	} {
		s := got[kind]
		if s == nil {
			t.Errorf("%s: no snapshot options", kind)
			continue
		}
		if want := filepath.Join(dir, build.SnapshotFileName(gvr, scope, "", "v7")); s.Path != want || *s.Scope != scope || s.Version != "v7" {
			t.Errorf("%s: snapshot %q scope %+v version %q, want %q %+v v7", kind, s.Path, *s.Scope, s.Version, want, scope)
		}
	}
	if got["Pod"] != nil && got["Deployment"] != nil && got["Pod"].Path == got["Deployment"].Path {
		t.Errorf("pods and deployments share %q", got["Pod"].Path)
	}
}

// Without WithSnapshots no informer saves a snapshot, as client-go's.
func TestNoSnapshotsByDefault(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0,
		WithInformerOptions(func(obj runtime.Object, opts *cache.SharedIndexInformerOptions) {
			if opts.Snapshot != nil {
				t.Errorf("%T: snapshot %+v without WithSnapshots", obj, opts.Snapshot)
			}
		}))
	f.Core().V1().Pods().Informer()
}
