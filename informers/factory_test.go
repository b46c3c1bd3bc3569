package informers

import (
	"context"
	"reflect"
	"testing"
	"time"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/sharding"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

func pod(ns, name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
}

func TestFactoryHonoursNamespaceTweakTransformAndOptions(t *testing.T) {
	defer goleak.VerifyNone(t)
	keep := pod("a", "keep", map[string]string{"app": "x"})
	keep.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	client := fake.NewClientset(
		keep,
		pod("a", "other-label", map[string]string{"app": "y"}),
		pod("b", "other-namespace", map[string]string{"app": "x"}),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"app": "x"}}},
	)
	var adjusted []string
	f := NewSharedInformerFactoryWithOptions(client, time.Hour,
		WithNamespace("a"),
		WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=x" }),
		WithTransform(func(obj any) (any, error) {
			obj.(metav1.Object).SetAnnotations(map[string]string{"seen": "yes"})
			return obj, nil
		}),
		WithInformerOptions(func(obj runtime.Object, opts *cache.SharedIndexInformerOptions) {
			adjusted = append(adjusted, reflect.TypeOf(obj).String())
			if opts.ResyncPeriod != time.Hour || opts.Indexers[cache.NamespaceIndex] == nil {
				t.Errorf("%T: options %+v, want client-go's (resync 1h, namespace index)", obj, opts)
			}
			opts.StripManagedFields = true
		}),
	)
	pods := f.Core().V1().Pods()
	nodes := f.Core().V1().Nodes()
	pods.Informer()
	nodes.Informer()
	ctx, cancel := context.WithCancel(context.Background())
	f.StartWithContext(ctx)
	if res := f.WaitForCacheSyncWithContext(ctx); res.Err != nil || len(res.Synced) != 2 {
		t.Fatalf("sync: %+v", res)
	}
	got, err := pods.Lister().List(labels.Everything())
	if err != nil || len(got) != 1 || got[0].Name != "keep" || got[0].Annotations["seen"] != "yes" || got[0].ManagedFields != nil {
		t.Errorf("pods: %v %v, want only a/keep, transformed, without managedFields", got, err)
	}
	// Nodes are cluster-scoped: the namespace does not apply, the tweak does.
	if n, err := nodes.Lister().Get("n1"); err != nil || n.Annotations["seen"] != "yes" {
		t.Errorf("node n1: %v %v", n, err)
	}
	if len(adjusted) != 2 {
		t.Errorf("WithInformerOptions called for %v, want pods and nodes once each", adjusted)
	}
	cancel()
	f.Shutdown()
}

func TestInformerForCallsACallersNewFuncAsIs(t *testing.T) {
	f := NewSharedInformerFactory(fake.NewClientset(), 0)
	mine := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{})
	calls := 0
	newFunc := func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { calls++; return mine }
	if got := f.InformerFor(&corev1.Pod{}, newFunc); got != mine {
		t.Errorf("InformerFor returned %T, want the newFunc's informer", got)
	}
	if got := f.Core().V1().Pods().Informer(); reflect.ValueOf(got).Elem().Field(0).Interface() != mine || calls != 1 {
		t.Errorf("the accessor did not reuse the informer stored for *v1.Pod (newFunc calls %d)", calls)
	}
}

func TestCustomResyncAndUnknownResource(t *testing.T) {
	var seen time.Duration
	f := NewSharedInformerFactoryWithOptions(fake.NewClientset(), time.Minute,
		WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.Pod{}: time.Second}),
		WithInformerOptions(func(_ runtime.Object, opts *cache.SharedIndexInformerOptions) { seen = opts.ResyncPeriod }))
	f.Core().V1().Pods().Informer()
	if seen != time.Second {
		t.Errorf("pod resync %v, want the custom 1s", seen)
	}
	if _, err := f.ForResource(corev1.SchemeGroupVersion.WithResource("widgets")); err == nil || err.Error() != "no informer found for /v1, Resource=widgets" {
		t.Errorf("unknown resource: %v", err)
	}
}

func TestShutdownStartsNothingAfterwards(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := NewSharedInformerFactory(fake.NewClientset(), 0)
	f.Shutdown()
	f.Core().V1().Pods().Informer()
	f.Start(make(chan struct{}))
	if got := f.WaitForCacheSync(make(chan struct{})); len(got) != 0 {
		t.Errorf("after Shutdown: %v started", got)
	}
}

func TestMalformedShardFailsOnlyItsInformer(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := fake.NewClientset(pod("a", "p", nil), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	f := NewSharedInformerFactoryWithOptions(client, 0, WithShard(func(obj runtime.Object) *sharding.Shard {
		if _, ok := obj.(*corev1.Pod); ok {
			return &sharding.Shard{Index: 3, Count: 2}
		}
		return nil
	}))
	podInformer := f.Core().V1().Pods().Informer()
	nodeInformer := f.Core().V1().Nodes().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	f.StartWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), nodeInformer.HasSynced) || podInformer.HasSynced() {
		t.Errorf("nodes synced %v, pods synced %v: want only nodes", nodeInformer.HasSynced(), podInformer.HasSynced())
	}
	cancel()
	f.Shutdown()
}
