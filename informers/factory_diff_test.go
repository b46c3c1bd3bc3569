package informers

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// observed is what a program sees of a factory in one scenario.
type observed struct {
	Synced          []string
	SyncErr         bool
	Pods, Nodes     []string
	ForResourceErr  string
	SameInformer    bool
	AfterShutdown   int
	GenericListSize int
}

// scenario drives a factory the way controllers do: accessors, Start,
// WaitForCacheSync, listers, ForResource, Shutdown, Start again.
func scenario(t *testing.T, newFactory func(kubernetes.Interface) clientinformers.SharedInformerFactory) observed {
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p1", Labels: map[string]string{"app": "x"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "p2", Labels: map[string]string{"app": "x"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p3"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"app": "x"}}},
	)
	f := newFactory(client)
	var o observed
	pods := f.Core().V1().Pods()
	o.SameInformer = pods.Informer() == f.Core().V1().Pods().Informer()
	nodes := f.Core().V1().Nodes()
	nodes.Informer()
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	f.StartWithContext(ctx) // a second start starts nothing new
	res := f.WaitForCacheSyncWithContext(ctx)
	for typ, ok := range res.Synced {
		if ok {
			o.Synced = append(o.Synced, typ.String())
		}
	}
	sort.Strings(o.Synced)
	o.SyncErr = res.Err != nil
	ps, _ := pods.Lister().List(labels.Everything())
	for _, p := range ps {
		o.Pods = append(o.Pods, p.Namespace+"/"+p.Name)
	}
	sort.Strings(o.Pods)
	ns, _ := nodes.Lister().List(labels.Everything())
	for _, n := range ns {
		o.Nodes = append(o.Nodes, n.Name)
	}
	if _, err := f.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "widgets"}); err != nil {
		o.ForResourceErr = err.Error()
	}
	gi, err := f.ForResource(corev1.SchemeGroupVersion.WithResource("pods"))
	if err != nil {
		t.Fatal(err)
	}
	all, _ := gi.Lister().List(labels.Everything())
	o.GenericListSize = len(all)
	cancel()
	f.Shutdown()
	f.Core().V1().ConfigMaps().Informer()
	f.Start(make(chan struct{}))
	o.AfterShutdown = len(f.WaitForCacheSync(make(chan struct{})))
	return o
}

// TestFactoryBehavesLikeClientGos runs each scenario on client-go's factory
// and on ours and compares what the program sees.
func TestFactoryBehavesLikeClientGos(t *testing.T) {
	defer goleak.VerifyNone(t)
	for name, opts := range map[string][]SharedInformerOption{
		"plain":     nil,
		"namespace": {WithNamespace("a")},
		"tweak":     {WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=x" })},
		"resync":    {WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.Pod{}: time.Hour})},
	} {
		t.Run(name, func(t *testing.T) {
			theirs := scenario(t, func(c kubernetes.Interface) clientinformers.SharedInformerFactory {
				return clientinformers.NewSharedInformerFactoryWithOptions(c, 0, clientGoOptions(name)...)
			})
			ours := scenario(t, func(c kubernetes.Interface) clientinformers.SharedInformerFactory {
				return NewSharedInformerFactoryWithOptions(c, 0, opts...)
			})
			if !reflect.DeepEqual(ours, theirs) {
				t.Errorf("ours:      %+v\nclient-go: %+v", ours, theirs)
			}
		})
	}
}

func clientGoOptions(name string) []clientinformers.SharedInformerOption {
	switch name {
	case "namespace":
		return []clientinformers.SharedInformerOption{clientinformers.WithNamespace("a")}
	case "tweak":
		return []clientinformers.SharedInformerOption{clientinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=x" })}
	case "resync":
		return []clientinformers.SharedInformerOption{clientinformers.WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.Pod{}: time.Hour})}
	}
	return nil
}
