package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
)

// kind is which informer a start runs.
type kind int

const (
	clientGoCold kind = iota
	oursCold
	oursWarm
	warmComponents
)

func (k kind) String() string {
	return [...]string{"client-go cold", "ours cold", "ours warm", "warm, components"}[k]
}

// start is what one informer start cost and what its handler saw.
type start struct {
	kind     kind
	cost     cost
	requests fake.RequestCounts
	read     int64
	seen     *recorder
	// save is how long the informer took to stop; wroteSnapshot says
	// whether the stop wrote a snapshot (else it synced the journal after
	// the one on disk); saved is the snapshot file's size after it.
	save          time.Duration
	wroteSnapshot bool
	saved         int64
	// componentsSave is how long the components snapshot took to write
	// (ours cold only).
	componentsSave time.Duration
	// fallback is why a components restart fell back, "" if it did not;
	// phases its load, probe and catch-up, and decoding times.
	fallback string
	phases   [3]time.Duration
}

// newInformer builds the informer of k over lw; ours keep their objects
// compact and save their snapshot at path when they stop.
func newInformer(k kind, lw clientcache.ListerWatcher, path string) cache.SharedIndexInformer {
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	if k == clientGoCold {
		return clientcache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, clientcache.SharedIndexInformerOptions{Indexers: indexers})
	}
	return cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		Indexers: indexers,
		Compact:  &cache.CompactOptions{},
		// The wire is not a ListWatch the informer can read a scope from:
		// it lists the whole collection, so the scope is the empty one.
		Snapshot: &cache.SnapshotOptions{Path: path, Scope: &cache.SnapshotScope{}, Interval: -1},
	})
}

// runOne starts the informer of k, waits for it and then its handler to
// sync, then stops it, and reports the start's cost, until each.
func runOne(ctx context.Context, k kind, srv *fake.Server, w *wire, path string) (start, error) {
	inf := newInformer(k, w, path)
	rec := &recorder{initial: map[string]string{}}
	reg, err := inf.AddEventHandler(rec.handler())
	if err != nil {
		return start{}, err
	}
	srv.ResetRequests()
	w.reset()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	m := startMeter()
	go func() { defer close(done); inf.RunWithContext(runCtx) }()
	synced := waitSynced(runCtx, inf.HasSynced)
	informer := m.mark(w.serverNanos.Load())
	synced = synced && waitSynced(runCtx, reg.HasSynced)
	s := start{kind: k, cost: m.end(w.serverNanos.Load()), requests: srv.RequestCounts(), read: w.read.Load(), seen: rec}
	s.cost.informer = informer
	before, beforeErr := os.Stat(path)
	stopAt := time.Now()
	cancel()
	<-done
	s.save = time.Since(stopAt)
	if fi, err := os.Stat(path); err == nil && k != clientGoCold {
		s.saved = fi.Size()
		s.wroteSnapshot = beforeErr != nil || !os.SameFile(before, fi) || !fi.ModTime().Equal(before.ModTime())
	}
	if k == oursCold {
		if s.componentsSave, err = saveComponents(inf.GetStore(), inf.LastSyncResourceVersion(), componentsPath(path)); err != nil {
			return s, err
		}
	}
	if !synced {
		return s, fmt.Errorf("%v: not synced before the run ended", k)
	}
	return s, nil
}

// recorder keeps what a handler was told: the initial list's objects (key
// to resourceVersion) and how many other notifications came.
type recorder struct {
	mu      sync.Mutex
	initial map[string]string
	others  int
}

func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			m, err := meta.Accessor(obj)
			if !isInInitialList || err != nil {
				r.others++
				return
			}
			r.initial[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
		},
		UpdateFunc: func(any, any) { r.count() },
		DeleteFunc: func(any) { r.count() },
	}
}

func (r *recorder) count() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.others++
}

// sameInitialList reports whether two handlers were given the same initial
// list and nothing else.
func sameInitialList(a, b *recorder) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.others != 0 || b.others != 0 || len(a.initial) != len(b.initial) {
		return false
	}
	for k, rv := range a.initial {
		if b.initial[k] != rv {
			return false
		}
	}
	return true
}
