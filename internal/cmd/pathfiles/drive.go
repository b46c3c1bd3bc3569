package main

import (
	"context"
	"fmt"
	"runtime/coverage"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
)

// drivePath runs one watch MODIFIED through a synced, idle informer to its
// handler's OnUpdate, with the coverage counters cleared just before the
// event and written to dir once the handler has it.
func drivePath(dir string) error {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, Objects: []runtime.Object{pod}})
	inf := cache.NewSharedIndexInformer(srv, &v1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	updated := make(chan struct{})
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { close(updated) }})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return fmt.Errorf("informer did not sync")
	}
	next := pod.DeepCopy()
	next.Labels = map[string]string{"step": "2"}
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	if _, err := srv.Update(next); err != nil {
		return err
	}
	select {
	case <-updated:
	case <-ctx.Done():
		return fmt.Errorf("no OnUpdate")
	}
	if err := coverage.WriteMetaDir(dir); err != nil {
		return err
	}
	return coverage.WriteCountersDir(dir)
}
