package informers

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"testing/synctest"

	cache "github.com/openinformer/cache"
	build "github.com/openinformer/cache/internal/informerbuild"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	ofake "github.com/openinformer/cache/fake"
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

// podsOn is a clientset whose pod lists and watches go to srv, so a
// factory's informer can restart against it.
func podsOn(srv *ofake.Server) kubernetes.Interface {
	client := fake.NewClientset()
	client.PrependReactor("list", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		list, err := srv.List(action.(clienttesting.ListActionImpl).ListOptions)
		return true, list, err
	})
	client.PrependWatchReactor("pods", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := srv.Watch(action.(clienttesting.WatchActionImpl).ListOptions)
		return true, w, err
	})
	return client
}

// A factory's informer saves its file when the factory shuts down, and the
// next factory's informer restarts from it without a full sync.
func TestWithSnapshotsRestartsWarm(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	// No request fails, so apimachinery's error reporting, unsafe in a
	// bubble (fake.PrepareForSynctest), is never called.
	synctest.Test(t, func(t *testing.T) { restartTwice(t, dir) })
	files, err := filepath.Glob(filepath.Join(dir, "core_v1_pods-*.snap"))
	if err != nil || len(files) != 1 {
		t.Errorf("snapshot files %v %v, want one for pods", files, err)
	}
}

// restartTwice starts a factory's pod informer twice over one server, a
// pod created while it is down.
func restartTwice(t *testing.T, dir string) {
	srv := ofake.MustNew(ofake.Options{Object: &corev1.Pod{}, Objects: []runtime.Object{pod("a", "p1", nil), pod("a", "p2", nil)}})
	for start := range 2 {
		srv.ResetRequests()
		f := NewSharedInformerFactoryWithOptions(podsOn(srv), 0, WithSnapshots(dir, ""))
		pods := f.Core().V1().Pods()
		pods.Informer()
		ctx, cancel := context.WithCancel(context.Background())
		f.StartWithContext(ctx)
		if res := f.WaitForCacheSyncWithContext(ctx); res.Err != nil {
			t.Fatalf("start %d: %v", start, res.Err)
		}
		if got, err := pods.Lister().List(labels.Everything()); err != nil || len(got) != 2+start {
			t.Errorf("start %d: lister has %d pods (%v), want %d", start, len(got), err, 2+start)
		}
		cancel()
		f.Shutdown()
		if full := srv.RequestCounts().FullSyncs(); start == 1 && full != 0 {
			t.Errorf("the restart made %d full syncs: %+v", full, srv.Requests())
		}
		if _, err := srv.Create(pod("a", fmt.Sprintf("down-%d", start), nil)); err != nil {
			t.Fatal(err)
		}
	}
}
