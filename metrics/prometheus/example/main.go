// Command example registers openinformer's metrics in controller-runtime's metrics registry (the
// one a manager serves on /metrics), runs an informer with a slow handler on the fake API
// server, and prints the handler-lag metrics a dashboard would show.
package main

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	oiprometheus "github.com/openinformer/cache/metrics/prometheus"
)

func main() {
	// Before any informer is built: the providers are process-wide.
	oiprometheus.New(metrics.Registry).Install()

	srv := fake.MustNew(fake.Options{Object: &corev1.Pod{}})
	name, err := cache.NewInformerName("example")
	if err != nil {
		log.Fatal(err)
	}
	defer name.Release()
	informer := cache.NewSharedIndexInformerWithOptions(srv, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		Identifier: name.WithResource(corev1.SchemeGroupVersion.WithResource("pods")),
	})
	release := make(chan struct{})
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { <-release }, // stuck until the end: its backlog grows
	}); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	defer func() { close(release); cancel(); <-done }()

	for i := range 5 {
		if _, err := srv.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprint("p", i)}}); err != nil {
			log.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // let the informer hand out the notifications
	families, err := metrics.Registry.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "openinformer_") && !strings.HasPrefix(f.GetName(), "informer_") {
			continue
		}
		for _, m := range f.GetMetric() {
			value := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			fmt.Printf("%s{handler=%q} %g\n", f.GetName(), labelValue(m.GetLabel(), "handler"), value)
		}
	}
}

func labelValue[L interface {
	GetName() string
	GetValue() string
}](labels []L, name string) string {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
