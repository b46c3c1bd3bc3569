package crcache

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testMapper knows pods (namespaced) and namespaces (cluster-scoped), and
// their list kinds, which controller-runtime's multi-namespace cache maps
// too, as its discovery-backed mapper does.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"Pod", "PodList"} {
		m.Add(corev1.SchemeGroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	for _, kind := range []string{"Namespace", "NamespaceList"} {
		m.Add(corev1.SchemeGroupVersion.WithKind(kind), meta.RESTScopeRoot)
	}
	return m
}

// fakeSource serves every informer from one fake API server of pods,
// narrowed to the informer's namespace and selectors as a real request is.
type fakeSource struct{ srv *fake.Server }

func (f fakeSource) listWatch(s listWatchScope) (cache.ListerWatcher, error) {
	var lw cache.ListerWatcherWithContext = f.srv
	if s.namespace != "" {
		lw = f.srv.Namespace(s.namespace)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			s.applyTo(&o, false)
			return lw.ListWithContext(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			s.applyTo(&o, true)
			return lw.WatchWithContext(ctx, o)
		},
	}, nil
}

// newPodServer is a fake server holding pods, named ns/name.
func newPodServer(t *testing.T, pods ...*corev1.Pod) *fake.Server {
	t.Helper()
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	srv, err := fake.New(fake.Options{Object: &corev1.Pod{}, Objects: objs, Fields: map[string]func(runtime.Object) string{
		"spec.nodeName": func(o runtime.Object) string { return o.(*corev1.Pod).Spec.NodeName },
	}})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

// running is a started cache and how to stop it.
type running struct {
	crcache.Cache
	stop func()
}

// startCache builds a cache over srv, starts it and waits for the
// informers named by objs to sync.
func startCache(t *testing.T, srv *fake.Server, opts crcache.Options, ours Options, objs ...client.Object) running {
	t.Helper()
	opts.Mapper = testMapper()
	c, err := newCache(&rest.Config{Host: "http://127.0.0.1:1"}, opts, ours, fakeSource{srv}.listWatch)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	for _, o := range objs {
		if _, err := c.GetInformer(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !c.WaitForCacheSync(syncCtx) {
		t.Fatal("cache did not sync")
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Start: %v", err)
		}
	}
	t.Cleanup(stop)
	return running{Cache: c, stop: stop}
}

// names are the ns/name of a list's items, sorted as the list has them.
func names(t *testing.T, list *corev1.PodList) []string {
	t.Helper()
	out := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, fmt.Sprintf("%s/%s", p.Namespace, p.Name))
	}
	return out
}
