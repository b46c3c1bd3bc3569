package crcache

import (
	"context"
	"slices"
	"sync"
	"testing"

	cache "github.com/openinformer/cache"
	corev1 "k8s.io/api/core/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// handlerSeries records the handler names each informer's series are made
// for.
type handlerSeries struct {
	mu    sync.Mutex
	names []string
}

type noop struct{}

func (noop) Set(float64) {}
func (noop) Inc()        {}

func (s *handlerSeries) NewPendingNotificationsMetric(_ cache.InformerNameAndResource, handler string) cache.GaugeMetric {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = append(s.names, handler)
	return noop{}
}

func (s *handlerSeries) NewOldestPendingAgeMetric(cache.InformerNameAndResource, string) cache.GaugeMetric {
	return noop{}
}

func (s *handlerSeries) NewBacklogCollapsesMetric(cache.InformerNameAndResource, string) cache.CounterMetric {
	return noop{}
}

func (s *handlerSeries) sorted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.names))
}

// Handlers added to one informer get their own series: by controller
// through ForController, else "handler", made unique in registration
// order; removing one still works, and a nil handler is still refused.
func TestHandlerNames(t *testing.T) {
	series := &handlerSeries{}
	c := startCache(t, newPodServer(t, pod("a", "p", nil)), crcache.Options{}, Options{HandlerMetrics: series}, &corev1.Pod{})
	ctx := context.Background()
	add := func(from crcache.Cache) cache.ResourceEventHandlerRegistration {
		t.Helper()
		inf, err := from.GetInformer(ctx, &corev1.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := inf.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{}, cache.HandlerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	add(c)
	add(c)
	add(ForController(c, "replicaset"))
	reg := add(ForController(c, "replicaset"))
	add(ForController(c, "endpoints"))
	want := []string{"endpoints", "handler", "handler#2", "replicaset", "replicaset#2"}
	if got := series.sorted(); !slices.Equal(got, want) {
		t.Errorf("handler series: %q, want %q", got, want)
	}

	inf, err := ForController(c, "replicaset").GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Errorf("RemoveEventHandler: %v", err)
	}
	if _, err := inf.AddEventHandler(nil); err == nil {
		t.Error("a nil handler was accepted")
	}
	if _, err := inf.AddEventHandler((*cache.ResourceEventHandlerFuncs)(nil)); err == nil {
		t.Error("a nil pointer handler, which can never be called, was accepted")
	}
}

// With several namespaces, a controller's handler is named after it on
// each namespace's informer, and its registration syncs and is removed
// through the informer seen as one.
func TestHandlerNamesPerNamespaceInformer(t *testing.T) {
	series := &handlerSeries{}
	c := startCache(t, newPodServer(t, pod("a", "p", nil), pod("b", "q", nil)),
		crcache.Options{DefaultNamespaces: map[string]crcache.Config{"a": {}, "b": {}}}, Options{HandlerMetrics: series}, &corev1.Pod{})
	inf, err := ForController(c, "replicaset").GetInformer(context.Background(), &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := series.sorted(), []string{"replicaset", "replicaset"}; !slices.Equal(got, want) {
		t.Errorf("handler series: %q, want %q", got, want)
	}
	if !cache.WaitForCacheSync(context.Background().Done(), reg.HasSynced) {
		t.Error("registration not synced")
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Errorf("RemoveEventHandler: %v", err)
	}
}
