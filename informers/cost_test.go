package informers

import (
	"context"
	"reflect"
	"testing"

	cache "github.com/openinformer/cache"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientinformers "k8s.io/client-go/informers"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes/fake"
	clientcache "k8s.io/client-go/tools/cache"
)

// The design's costs: recognising the generated constructor once per
// informer, and the generated table's indirection per list and watch
// request (against one client-go fake call).

func BenchmarkRecogniseGeneratedConstructor(b *testing.B) {
	newFunc := captureNewFunc(b)
	b.ReportAllocs()
	for b.Loop() {
		if !isGeneratedConstructor(newFunc) {
			b.Fatal("not recognised")
		}
	}
}

// captureNewFunc returns the constructor client-go's pod accessor passes.
func captureNewFunc(b *testing.B) internalinterfaces.NewInformerFunc {
	var r recorder
	corev1informers.New(&r, "", nil).Pods().Informer()
	if r.newFunc == nil {
		b.Fatal("no constructor captured")
	}
	return r.newFunc
}

// recorder is a factory that keeps the constructor it is given.
type recorder struct {
	newFunc internalinterfaces.NewInformerFunc
}

func (r *recorder) Start(<-chan struct{})                   {}
func (r *recorder) InformerName() *clientcache.InformerName { return nil }
func (r *recorder) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	r.newFunc = newFunc
	return cache.NewSharedIndexInformer(&cache.ListWatch{}, obj, 0, cache.Indexers{})
}

func BenchmarkFactoryPodInformer(b *testing.B) {
	client := fake.NewClientset()
	b.Run("ours", func(b *testing.B) {
		for b.Loop() {
			NewSharedInformerFactory(client, 0).Core().V1().Pods().Informer()
		}
	})
	b.Run("client-go", func(b *testing.B) {
		for b.Loop() {
			clientinformers.NewSharedInformerFactory(client, 0).Core().V1().Pods().Informer()
		}
	})
}

func BenchmarkListRequest(b *testing.B) {
	client := fake.NewClientset()
	lw := cache.ToListerWatcherWithContext(coreBuiltins()[reflect.TypeFor[*corev1.Pod]()].listWatch(client, "", nil))
	ctx := context.Background()
	b.Run("ours", func(b *testing.B) {
		for b.Loop() {
			if _, err := lw.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDesignCostsInAllocations pins the design's per-call costs: telling
// client-go's constructor apart allocates nothing, and a list request
// through the builtins table allocates one closure more than calling the
// clientset directly.
func TestDesignCostsInAllocations(t *testing.T) {
	var r recorder
	corev1informers.New(&r, "", nil).Pods().Informer()
	if got := testing.AllocsPerRun(100, func() { isGeneratedConstructor(r.newFunc) }); got != 0 {
		t.Errorf("isGeneratedConstructor: %v allocs, want 0", got)
	}
	client := fake.NewClientset()
	lw := cache.ToListerWatcherWithContext(coreBuiltins()[reflect.TypeFor[*corev1.Pod]()].listWatch(client, "", nil))
	ctx := context.Background()
	ours := testing.AllocsPerRun(100, func() { _, _ = lw.ListWithContext(ctx, metav1.ListOptions{}) })
	direct := testing.AllocsPerRun(100, func() { _, _ = client.CoreV1().Pods("").List(ctx, metav1.ListOptions{}) })
	if ours > direct+1 {
		t.Errorf("list through the table: %v allocs, direct %v; want at most one more", ours, direct)
	}
}

// TestInformerForBeforeTheGroupAccessorFallsBackLoudly covers the one path
// that yields client-go's informer: a generated constructor handed to
// InformerFor before the factory served its group. It is reported; once
// the group accessor has run, the same call builds ours.
func TestInformerForBeforeTheGroupAccessorFallsBackLoudly(t *testing.T) {
	var r recorder
	corev1informers.New(&r, "", nil).Pods().Informer()
	var reported []error
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, _ string, _ ...any) { reported = append(reported, err) }}
	defer func() { utilruntime.ErrorHandlers = saved }()

	f := NewSharedInformerFactory(fake.NewClientset(), 0)
	if got := reflect.TypeOf(f.InformerFor(&corev1.Pod{}, r.newFunc)).Elem().PkgPath(); got != "k8s.io/client-go/tools/cache" || len(reported) != 1 {
		t.Errorf("before Core(): informer from %s, %d errors reported; want client-go's, reported once", got, len(reported))
	}
	g := NewSharedInformerFactory(fake.NewClientset(), 0)
	g.Core()
	requireOurs(t, "after Core()", g.InformerFor(&corev1.Pod{}, r.newFunc))
}
