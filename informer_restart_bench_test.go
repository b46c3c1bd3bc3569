package cache

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
	"github.com/openinformer/cache/internal/store"
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

// BenchmarkJournalPerEvent applies one realistic pod update per iteration
// to an informer's store as its queue's consumer does, then journals it,
// with snapshots off and on (compact and plain stores): the difference is
// what the journal costs per event. Pods have a framed index.
func BenchmarkJournalPerEvent(b *testing.B) {
	pods := fixtures.Pods(29, 1000)
	for _, bc := range []struct {
		name             string
		compact, journal bool
	}{{"compact/off", true, false}, {"compact/on", true, true}, {"plain/off", false, false}, {"plain/on", false, true}} {
		b.Run(bc.name, func(b *testing.B) {
			inf, deltas := journalingInformer(b, bc.compact, bc.journal)
			for i, p := range pods {
				deltas[0] = Delta{Type: Updated, Object: p}
				applyAndJournal(b, inf, deltas)
				if i == 0 {
					b.ReportAllocs()
				}
			}
			i := 0
			for b.Loop() {
				deltas[0] = Delta{Type: Updated, Object: pods[i%len(pods)]}
				applyAndJournal(b, inf, deltas)
				i++
			}
		})
	}
}

// journalingInformer is an informer of pods, not running, whose journal,
// when on, is started in a temporary directory.
func journalingInformer(tb testing.TB, compactStore, journal bool) (*sharedIndexInformer, []Delta) {
	opts := snapshotOptions(filepath.Join(tb.TempDir(), "pods.snap"), compactStore)
	opts.Indexers["node"] = func(obj any) ([]string, error) { return []string{obj.(*v1.Pod).Spec.NodeName}, nil }
	inf := newSharedIndexInformer(&ListWatch{}, &v1.Pod{}, opts, nil)
	if !journal {
		return inf, make([]Delta, 1)
	}
	r, err := buildRestarter(inf, inf.lw, *inf.snapshot)
	if err != nil {
		tb.Fatal(err)
	}
	inf.restart = r
	h := r.identity
	h.Encoding, h.ResourceVersion, h.WrittenAt = r.store.Encoding(r.store.IndexerSet()), "1", time.Unix(0, 0)
	r.startJournalLocked(klog.Background(), h, r.store.IndexerSet())
	tb.Cleanup(func() { r.stopJournalLocked() })
	return inf, make([]Delta, 1)
}

// applyAndJournal applies deltas to inf's store and journals them, as the
// informer's ProcessBatch does.
func applyAndJournal(tb testing.TB, inf *sharedIndexInformer, deltas []Delta) {
	journal := func(deltas []Delta, writes store.Committed, err error) {
		inf.restart.journalApplied(klog.Background(), deltas, writes, err)
	}
	if _, _, err := inf.indexer.applyDeltas(deltas, false, nil, journal); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkStop100kPods is the stop of an informer of 100k realistic pods
// in a compact store whose snapshot is on disk, after 1% of its pods
// changed (1,000 updates, journaled as applied): "save" writes the whole
// snapshot, what every stop did before the journal ended runs (and what
// one still does past the journal's bound), "journal" syncs the journal
// (docs/RESTART.md, "Stopping"). Run with -benchtime 1x: one iteration is
// a stop.
func BenchmarkStop100kPods(b *testing.B) {
	pods := fixtures.Pods(29, 100000)
	for _, mode := range []string{"save", "journal"} {
		b.Run(mode, func(b *testing.B) {
			inf, deltas := journalingInformer(b, true, false)
			r, err := buildRestarter(inf, inf.lw, *inf.snapshot)
			if err != nil {
				b.Fatal(err)
			}
			inf.restart, r.clock = r, clock.RealClock{}
			list := make([]any, len(pods))
			for i, p := range pods {
				list[i] = p
			}
			if err := inf.indexer.Replace(list, "1"); err != nil {
				b.Fatal(err)
			}
			logger := klog.Background()
			rv := 1
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				r.save(logger) // the snapshot on disk, its journal started
				for j := range len(pods) / 100 {
					rv++
					p := pods[(i*1000+j*97)%len(pods)].DeepCopy()
					p.ResourceVersion = strconv.Itoa(rv)
					deltas[0] = Delta{Type: Updated, Object: p}
					applyAndJournal(b, inf, deltas)
				}
				if mode == "save" {
					r.blockDeltas.Lock()
					r.journalOnDisk = false
					r.blockDeltas.Unlock()
				}
				b.StartTimer()
				r.stop(logger, true)
			}
			b.StopTimer()
		})
	}
}
