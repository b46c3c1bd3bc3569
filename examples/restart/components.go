package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/restartfsm"
	"github.com/openinformer/cache/internal/restartfsm/catchup"
	"github.com/openinformer/cache/internal/snapshot"
)

// The components start measures the warm restart's parts as built
// (internal/snapshot's file, internal/restartfsm's catch-up against the
// server) outside the informer: the load of the file into a staged map of
// encoded objects, the probe and resumed watch, the catch-up, and the
// decoding of every object for the handlers' initial list, which a
// hand-over to any handler cannot avoid. It is what the informer's warm
// start costs without its store's bookkeeping.

// componentsHeader is the components snapshot's identity.
var componentsHeader = snapshot.Header{Resource: "/v1, Resource=pods", Encoding: "examples/restart protobuf"}

// saveComponents writes the stopped informer's objects, each as its
// protobuf body, to path at the informer's last synced version, and
// reports how long that took.
func saveComponents(store cache.Store, resourceVersion, path string) (time.Duration, error) {
	begin := time.Now()
	objs := store.List()
	h := componentsHeader
	h.ResourceVersion, h.WrittenAt, h.Count = resourceVersion, begin, len(objs)
	w, err := snapshot.Create(path, h)
	if err != nil {
		return 0, err
	}
	for _, obj := range objs {
		p := obj.(*corev1.Pod)
		data, err := p.Marshal()
		if err != nil {
			w.Abort()
			return 0, err
		}
		if err := w.Add(p.Namespace+"/"+p.Name, data); err != nil {
			return 0, err
		}
	}
	return time.Since(begin), w.Commit()
}

// staged is the staged cache of a components restart: encoded objects by
// key, as a compact store adopts them, seen by no handler.
type staged map[string][]byte

// load reads path into st and returns its resourceVersion; values are
// copied once, as a loader copies each into its encoding.
func (st staged) load(path string) (string, error) {
	h := componentsHeader
	r, err := snapshot.Open(path, &h)
	if err != nil {
		return "", err
	}
	defer r.Close()
	for {
		k, v, err := r.Next()
		if err == io.EOF {
			return r.Header().ResourceVersion, nil
		}
		if err != nil {
			return "", err
		}
		st[string(k)] = append([]byte(nil), v...)
	}
}

// apply applies a catch-up event.
func (st staged) apply(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	key := p.Namespace + "/" + p.Name
	if ev.Type == watch.Deleted {
		delete(st, key)
		return
	}
	if data, err := p.Marshal(); err == nil {
		st[key] = data
	}
}

// runComponents restarts from path through the catch-up, then decodes
// every staged object for the handler, and reports the start's cost.
func runComponents(ctx context.Context, srv *fake.Server, w *wire, path string) (start, error) {
	rec := &recorder{initial: map[string]string{}}
	add := rec.handler().OnAdd
	srv.ResetRequests()
	w.reset()
	m := startMeter()
	st := staged{}
	var phases [3]time.Duration
	begin := time.Now()
	res := catchup.Run(ctx, catchup.Config{
		ListerWatcher: w,
		Load: func() (string, error) {
			defer func() { phases[0] = time.Since(begin) }()
			return st.load(path)
		},
		Apply:   st.apply,
		Machine: restartfsm.Config{CatchUpTimeout: cache.DefaultSnapshotCatchUpTimeout},
	})
	if !res.Synced {
		if res.Reason == 0 {
			return start{}, fmt.Errorf("components restart stopped: %w", res.Err)
		}
		return start{kind: warmComponents, cost: m.end(w.serverNanos.Load()), requests: srv.RequestCounts(), seen: rec, fallback: res.Reason.String()}, nil
	}
	phases[1] = time.Since(begin) - phases[0]
	decoding := time.Now()
	for _, data := range st {
		p := &corev1.Pod{}
		if err := p.Unmarshal(data); err != nil {
			return start{}, err
		}
		add(p, true)
	}
	phases[2] = time.Since(decoding)
	s := start{kind: warmComponents, cost: m.end(w.serverNanos.Load()), requests: srv.RequestCounts(), read: w.read.Load(), seen: rec, phases: phases}
	// The staged map is the cache the informer would keep: measured in
	// the steady heap.
	runtime.KeepAlive(st)
	if fi, err := os.Stat(path); err == nil {
		s.saved = fi.Size()
	}
	return s, nil
}

// componentsPath is the components snapshot's file beside the informer's.
func componentsPath(path string) string {
	return strings.TrimSuffix(path, ".snap") + "-components.snap"
}
