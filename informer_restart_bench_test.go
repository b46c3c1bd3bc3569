package cache

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
)

// BenchmarkRestart10kPods starts an informer of 10k realistic pods on
// fake/ until its handler has every initial add, then stops it: warm from
// a snapshot (compact and plain stores), and cold, ours and client-go's,
// side by side. The warm runs' snapshot is at the server's version, so
// the catch-up is the probe alone. Each iteration also pays the stop-time
// save's check (skipped: the version has not moved).
func BenchmarkRestart10kPods(b *testing.B) {
	const pods = 10000
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, Objects: fixtures.Objects(fixtures.Pods(29, pods))})
	dir := b.TempDir()
	run := func(b *testing.B, inf interface {
		AddEventHandler(ResourceEventHandler) (ResourceEventHandlerRegistration, error)
		RunWithContext(context.Context)
		HasSynced() bool
	}) {
		var adds atomic.Int64
		reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{AddFunc: func(any) { adds.Add(1) }})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced)
		cancel()
		<-done
		if adds.Load() != pods {
			b.Fatalf("%d adds", adds.Load())
		}
	}
	for _, bc := range []struct {
		name    string
		compact bool
		warm    bool
	}{{"warm/compact", true, true}, {"warm/plain", false, true}, {"cold/compact", true, false}, {"cold/plain", false, false}} {
		b.Run(bc.name, func(b *testing.B) {
			opts := SharedIndexInformerOptions{Indexers: Indexers{NamespaceIndex: MetaNamespaceIndexFunc}}
			if bc.compact {
				opts.Compact = &CompactOptions{}
			}
			if bc.warm {
				opts.Snapshot = &SnapshotOptions{Path: filepath.Join(dir, bc.name[5:]+".snap"), Scope: &SnapshotScope{}, Interval: -1}
				run(b, NewSharedIndexInformerWithOptions(srv, &v1.Pod{}, opts)) // writes the snapshot
			}
			b.ReportAllocs()
			for b.Loop() {
				run(b, NewSharedIndexInformerWithOptions(srv, &v1.Pod{}, opts))
			}
		})
	}
	b.Run("cold/client-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			run(b, clientcache.NewSharedIndexInformer(srv, &v1.Pod{}, 0, clientcache.Indexers{NamespaceIndex: MetaNamespaceIndexFunc}))
		}
	})
}
