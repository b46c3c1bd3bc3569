package integration

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openinformer/cache/integration/apiserver"
)

const widgetValueField = "spec.value"

// widgetReconciler remembers, per widget, what the last reconcile read from
// the manager's cache: spec.value, or -1 when the widget was gone.
type widgetReconciler struct {
	client client.Client
	mu     sync.Mutex
	seen   map[types.NamespacedName]int64
	errs   []error
}

func (r *widgetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w := newWidgetObject()
	value := int64(-1)
	err := r.client.Get(ctx, req.NamespacedName, w)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		r.mu.Lock()
		r.errs = append(r.errs, err)
		r.mu.Unlock()
		return reconcile.Result{}, err
	default:
		value, _ = apiserver.WidgetValue(w)
	}
	r.mu.Lock()
	r.seen[req.NamespacedName] = value
	r.mu.Unlock()
	return reconcile.Result{}, nil
}

// diff compares what reconciles saw with the server's widgets.
func (r *widgetReconciler) diff(want map[types.NamespacedName]int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		return fmt.Sprintf("reconcile errors: %v", r.errs)
	}
	for name, v := range want {
		if got, ok := r.seen[name]; !ok || got != v {
			return fmt.Sprintf("%s: reconcile saw %d (seen: %v), server has %d", name, got, ok, v)
		}
	}
	for name, got := range r.seen {
		if _, ok := want[name]; !ok && got != -1 {
			return fmt.Sprintf("%s was deleted, reconcile last saw %d", name, got)
		}
	}
	return ""
}

// deletesSeen counts widgets whose last reconcile found them gone.
func (r *widgetReconciler) deletesSeen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.seen {
		if v == -1 {
			n++
		}
	}
	return n
}

func newWidgetObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiserver.WidgetGVK)
	return u
}

// TestControllerRuntimeManager: a controller-runtime manager whose cache
// builds informers with each implementation reconciles creates, updates and
// deletes reading from the cache, and serves a field index added after start.
func TestControllerRuntimeManager(t *testing.T) {
	expectOurGoroutinesGone(t)
	crlog.SetLogger(logr.Discard())
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	for _, impl := range implementations {
		t.Run(impl.name, func(t *testing.T) { checkManager(t, srv, impl) })
	}
}

func checkManager(t *testing.T, srv *apiserver.Server, impl implementation) {
	ctx := context.Background()
	probe := newTrafficProbe()
	mgr, rec := startManager(t, probe.wrap(srv.Config()), impl)
	direct, err := client.New(srv.Config(), client.Options{Scheme: runtime.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}

	workload{namespaces: testNamespaces, prefix: "cr-" + impl.name, objects: scaled(60), writers: 3, updates: 2, deleteEvery: 4}.run(t, srv.Dynamic())
	want := serverValues(t, ctx, direct)
	eventually(t, 2*time.Minute, "reconciles saw the server's state", func() (bool, string) {
		d := rec.diff(want)
		return d == "", d
	})
	if rec.deletesSeen() == 0 {
		t.Error("no reconcile saw a deleted widget")
	}
	if counts, _ := probe.snapshot(); counts[kindGet] != 0 {
		t.Errorf("manager client read from the server, not the cache: requests %v", counts)
	}

	err = mgr.GetFieldIndexer().IndexField(ctx, newWidgetObject(), widgetValueField, func(o client.Object) []string {
		if v, ok := apiserver.WidgetValue(o.(*unstructured.Unstructured)); ok {
			return []string{strconv.FormatInt(v, 10)}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("add field index after start: %v", err)
	}
	checkFieldIndex(t, ctx, mgr.GetClient(), want)
}

// checkFieldIndex lists by spec.value through the manager's cached client
// and compares with the server's widgets.
func checkFieldIndex(t *testing.T, ctx context.Context, c client.Reader, want map[types.NamespacedName]int64) {
	t.Helper()
	for _, value := range []int64{0, 1, 2, 102} {
		list := newWidgetList()
		if err := c.List(ctx, list, client.MatchingFields{widgetValueField: strconv.FormatInt(value, 10)}); err != nil {
			t.Fatalf("list by %s=%d: %v", widgetValueField, value, err)
		}
		got := map[types.NamespacedName]bool{}
		for i := range list.Items {
			got[types.NamespacedName{Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName()}] = true
		}
		for name, v := range want {
			if (v == value) != got[name] {
				t.Errorf("list by %s=%d: %s (value %d) listed=%v", widgetValueField, value, name, v, got[name])
			}
		}
		if len(got) > len(want) {
			t.Errorf("list by %s=%d returned %d widgets, more than the server has", widgetValueField, value, len(got))
		}
	}
}

// startManager runs a manager with one widget controller; it stops when the
// test ends.
func startManager(t *testing.T, config *rest.Config, impl implementation) (manager.Manager, *widgetReconciler) {
	t.Helper()
	mgr, err := manager.New(config, manager.Options{
		Scheme:  runtime.NewScheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{NewInformer: impl.newInformer},
		Client:  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &widgetReconciler{client: mgr.GetClient(), seen: map[types.NamespacedName]int64{}}
	// Names are process-wide; -count=2 would build the same names again.
	skipNameCheck := true
	err = builder.ControllerManagedBy(mgr).For(newWidgetObject()).Named("widgets-" + impl.name).
		WithOptions(controller.Options{SkipNameValidation: &skipNameCheck}).Complete(rec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("manager cache did not sync")
	}
	return mgr, rec
}

func newWidgetList() *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(apiserver.WidgetGroupVersion.WithKind(apiserver.WidgetGVK.Kind + "List"))
	return list
}

// serverValues lists widgets with their spec.value.
func serverValues(t *testing.T, ctx context.Context, c client.Reader) map[types.NamespacedName]int64 {
	t.Helper()
	list := newWidgetList()
	if err := c.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	out := map[types.NamespacedName]int64{}
	for i := range list.Items {
		v, _ := apiserver.WidgetValue(&list.Items[i])
		out[types.NamespacedName{Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName()}] = v
	}
	return out
}
