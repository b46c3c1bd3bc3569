package cache

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"
)

// diffServer is a scripted, in-memory API server for pods in namespace
// "ns": a current state, an event log for resuming watches, open watches,
// and a switch that makes lists and watches fail while the script changes
// state behind the reflector's back.
type diffServer struct {
	mu        sync.Mutex
	rv        int
	objs      map[string]*v1.Pod
	log       []watch.Event
	compacted int
	watches   []*diffWatch
	blocked   bool
}

// diffWatch is a watch.Interface with a large buffer, so the script never
// blocks on a slow reflector.
type diffWatch struct {
	s    *diffServer
	ch   chan watch.Event
	once sync.Once
}

func (w *diffWatch) ResultChan() <-chan watch.Event { return w.ch }

func (w *diffWatch) Stop() {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.stopLocked()
}

func (w *diffWatch) stopLocked() {
	w.once.Do(func() { close(w.ch) })
	for i, x := range w.s.watches {
		if x == w {
			w.s.watches = append(w.s.watches[:i:i], w.s.watches[i+1:]...)
			break
		}
	}
}

// apply changes one pod; open watches see the event.
func (s *diffServer) apply(t watch.EventType, name string, labels ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	pod := newTestPod("ns", name, strconv.Itoa(s.rv), labels...)
	if t == watch.Deleted {
		pod = s.objs[name].DeepCopy()
		pod.ResourceVersion = strconv.Itoa(s.rv)
		delete(s.objs, name)
	} else {
		s.objs[name] = pod
	}
	s.log = append(s.log, watch.Event{Type: t, Object: pod})
	for _, w := range s.watches {
		w.ch <- watch.Event{Type: t, Object: pod.DeepCopy()}
	}
}

// closeWatches ends every open watch cleanly; reflectors resume from their
// last resource version.
func (s *diffServer) closeWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.watches) > 0 {
		s.watches[0].stopLocked()
	}
}

// expire compacts the log, fails open watches with 410 Gone and blocks
// lists and watches until unblock.
func (s *diffServer) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = s.rv
	s.blocked = true
	gone := apierrors.NewResourceExpired("too old resource version")
	for len(s.watches) > 0 {
		w := s.watches[0]
		w.ch <- watch.Event{Type: watch.Error, Object: &gone.ErrStatus}
		w.stopLocked()
	}
}

func (s *diffServer) unblock() {
	s.mu.Lock()
	s.blocked = false
	s.mu.Unlock()
}

func (s *diffServer) snapshotLocked() []*v1.Pod {
	out := make([]*v1.Pod, 0, len(s.objs))
	for _, p := range s.objs {
		out = append(out, p.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *diffServer) List(metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blocked {
		return nil, apierrors.NewServiceUnavailable("blocked by the script")
	}
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(s.rv)}}
	for _, p := range s.snapshotLocked() {
		list.Items = append(list.Items, *p)
	}
	return list, nil
}

func (s *diffServer) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blocked {
		return nil, apierrors.NewServiceUnavailable("blocked by the script")
	}
	w := &diffWatch{s: s, ch: make(chan watch.Event, 10000)}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		for _, p := range s.snapshotLocked() {
			w.ch <- watch.Event{Type: watch.Added, Object: p}
		}
		w.ch <- watch.Event{Type: watch.Bookmark, Object: &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: strconv.Itoa(s.rv),
			Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		}}}
	} else {
		from, err := strconv.Atoi(opts.ResourceVersion)
		if err != nil || from < s.compacted {
			return nil, apierrors.NewResourceExpired("too old resource version")
		}
		for _, ev := range s.log {
			if p := ev.Object.(*v1.Pod); diffRV(p) > from {
				w.ch <- watch.Event{Type: ev.Type, Object: p.DeepCopy()}
			}
		}
	}
	s.watches = append(s.watches, w)
	return w, nil
}

func diffRV(p *v1.Pod) int {
	n, _ := strconv.Atoi(p.ResourceVersion)
	return n
}

// diffListMode hides watch-list support, so reflectors LIST.
type diffListMode struct{ *diffServer }

func (diffListMode) IsWatchListSemanticsUnSupported() bool { return true }

// diffNote is one handler call, reduced to what both implementations must
// agree on.
type diffNote struct {
	kind         string
	oldRV, newRV string
	initial      bool
	tombstone    bool
}

func (n diffNote) String() string {
	switch n.kind {
	case "add":
		return fmt.Sprintf("add %s initial=%v", n.newRV, n.initial)
	case "update":
		return fmt.Sprintf("update %s->%s", n.oldRV, n.newRV)
	}
	return fmt.Sprintf("delete %s tombstone=%v", n.oldRV, n.tombstone)
}

// diffRecorder records, per key, what one handler was told.
type diffRecorder struct {
	mu    sync.Mutex
	byKey map[string][]diffNote
}

func newDiffRecorder() *diffRecorder { return &diffRecorder{byKey: map[string][]diffNote{}} }

// diffKeyRV returns the key and RV of a pod or of a tombstone (of either
// package) and whether it was a tombstone.
func diffKeyRV(obj interface{}) (string, string, bool) {
	switch t := obj.(type) {
	case DeletedFinalStateUnknown:
		return t.Key, t.Obj.(*v1.Pod).ResourceVersion, true
	case *v1.Pod:
		return t.Namespace + "/" + t.Name, t.ResourceVersion, false
	}
	panic(fmt.Sprintf("unexpected %T", obj))
}

func (r *diffRecorder) note(key string, n diffNote) {
	r.mu.Lock()
	r.byKey[key] = append(r.byKey[key], n)
	r.mu.Unlock()
}

func (r *diffRecorder) OnAdd(obj interface{}, initial bool) {
	k, rv, _ := diffKeyRV(obj)
	r.note(k, diffNote{kind: "add", newRV: rv, initial: initial})
}

func (r *diffRecorder) OnUpdate(o, n interface{}) {
	k, orv, _ := diffKeyRV(o)
	_, nrv, _ := diffKeyRV(n)
	r.note(k, diffNote{kind: "update", oldRV: orv, newRV: nrv})
}

func (r *diffRecorder) OnDelete(obj interface{}) {
	k, rv, tomb := diffKeyRV(obj)
	r.note(k, diffNote{kind: "delete", oldRV: rv, tombstone: tomb})
}

// seen reports whether the handler was told about key at resource version rv.
func (r *diffRecorder) seen(key string, rv int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	want := strconv.Itoa(rv)
	for _, n := range r.byKey[key] {
		if n.newRV == want {
			return true
		}
	}
	return false
}

func (r *diffRecorder) countSyncs(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := 0
	for _, n := range r.byKey[key] {
		if n.kind == "update" && n.oldRV == n.newRV {
			c++
		}
	}
	return c
}

// sequences renders the notes per key; with dropSync, resync updates (same
// RV, their number depends on wall-clock time) are left out.
func (r *diffRecorder) sequences(dropSync bool) map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for k, notes := range r.byKey {
		for _, n := range notes {
			if dropSync && n.kind == "update" && n.oldRV == n.newRV {
				continue
			}
			out[k] = append(out[k], n.String())
		}
	}
	return out
}

// diffSubject is one informer implementation driven by the script.
type diffSubject struct {
	name     string
	server   *diffServer
	informer SharedIndexInformer
	shutDown func(SharedInformer, ResourceEventHandlerRegistration) error
	rec      map[string]*diffRecorder
	reg      map[string]ResourceEventHandlerRegistration
	cancel   context.CancelFunc
	done     chan struct{}
}

var diffIndexers = Indexers{
	NamespaceIndex: MetaNamespaceIndexFunc,
	"app": func(obj interface{}) ([]string, error) {
		if v, ok := obj.(*v1.Pod).Labels["app"]; ok {
			return []string{v}, nil
		}
		return nil, nil
	},
}

func (d *diffSubject) add(t *testing.T, name string, period time.Duration) {
	r := newDiffRecorder()
	reg, err := d.informer.AddEventHandlerWithResyncPeriod(r, period)
	require.NoError(t, err)
	d.rec[name], d.reg[name] = r, reg
}

func (d *diffSubject) run() {
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel, d.done = cancel, make(chan struct{})
	go func() { defer close(d.done); d.informer.RunWithContext(ctx) }()
}

func (d *diffSubject) stop() {
	d.cancel()
	<-d.done
}

// diffEventually polls cond; the reflector's backoff runs on real time.
func diffEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// diffScenario runs the script against client-go's informer and ours in
// lockstep and compares what every handler saw, per key, and the caches.
func diffScenario(t *testing.T, watchList, resync bool) {
	informerPeriod := time.Duration(0)
	if resync {
		informerPeriod = time.Second
	}
	mkLW := func(s *diffServer) ListerWatcher {
		if watchList {
			return s
		}
		return diffListMode{s}
	}
	theirsSrv, oursSrv := &diffServer{objs: map[string]*v1.Pod{}}, &diffServer{objs: map[string]*v1.Pod{}}
	subjects := []*diffSubject{
		{name: "client-go", server: theirsSrv, shutDown: clientcache.ShutDownEventHandler,
			informer: clientcache.NewSharedIndexInformer(mkLW(theirsSrv), &v1.Pod{}, informerPeriod, diffIndexers)},
		{name: "openinformer", server: oursSrv, shutDown: ShutDownEventHandler,
			informer: NewSharedIndexInformer(mkLW(oursSrv), &v1.Pod{}, informerPeriod, diffIndexers)},
	}
	each := func(f func(d *diffSubject)) {
		for _, d := range subjects {
			f(d)
		}
	}
	marker := 0
	// bump updates the marker pod and waits until every live handler saw it,
	// which (per-handler order) means it saw everything before.
	bump := func(handlers ...string) {
		each(func(d *diffSubject) { d.server.apply(watch.Modified, "marker") })
		marker = oursSrv.rv
		each(func(d *diffSubject) {
			for _, h := range handlers {
				diffEventually(t, d.name+" "+h+" marker", func() bool { return d.rec[h].seen("ns/marker", marker) })
			}
		})
	}

	each(func(d *diffSubject) {
		d.rec, d.reg = map[string]*diffRecorder{}, map[string]ResourceEventHandlerRegistration{}
		d.server.apply(watch.Added, "a", "app", "x")
		d.server.apply(watch.Added, "b", "app", "y")
		d.server.apply(watch.Added, "c", "app", "x")
		d.server.apply(watch.Added, "marker")
		d.add(t, "plain", 0)
		d.add(t, "resync", time.Second)
		d.add(t, "removed", 0)
		d.run()
	})
	each(func(d *diffSubject) {
		for name, reg := range d.reg {
			diffEventually(t, d.name+" "+name+" synced", reg.HasSynced)
		}
	})

	// Watch events.
	each(func(d *diffSubject) {
		d.server.apply(watch.Added, "d", "app", "y")
		d.server.apply(watch.Modified, "a", "app", "y")
		d.server.apply(watch.Deleted, "b")
	})
	bump("plain", "resync", "removed")

	// The watch closes; the reflector resumes from its resource version.
	each(func(d *diffSubject) {
		d.server.closeWatches()
		d.server.apply(watch.Modified, "c", "app", "z")
		d.server.apply(watch.Added, "e")
	})
	bump("plain", "resync", "removed")

	// A late handler gets the cache as initial adds, then what follows.
	each(func(d *diffSubject) {
		d.add(t, "late", 0)
		diffEventually(t, d.name+" late synced", d.reg["late"].HasSynced)
		d.server.apply(watch.Modified, "d", "app", "x")
	})
	bump("plain", "resync", "removed", "late")

	// A removed handler hears nothing more.
	each(func(d *diffSubject) {
		require.NoError(t, d.shutDown(d.informer, d.reg["removed"]))
		d.server.apply(watch.Modified, "e", "app", "y")
	})
	bump("plain", "resync", "late")

	// 410 Gone: changes made meanwhile are only seen through the relist.
	each(func(d *diffSubject) {
		d.server.expire()
		d.server.apply(watch.Deleted, "c")
		d.server.apply(watch.Modified, "d", "app", "y")
		d.server.apply(watch.Added, "f", "app", "x")
		d.server.apply(watch.Modified, "marker")
		d.server.unblock()
	})
	marker = oursSrv.rv
	each(func(d *diffSubject) {
		for _, h := range []string{"plain", "resync", "late"} {
			diffEventually(t, d.name+" relist "+h, func() bool { return d.rec[h].seen("ns/marker", marker) })
		}
	})
	if resync {
		each(func(d *diffSubject) {
			diffEventually(t, d.name+" resync", func() bool { return d.rec["resync"].countSyncs("ns/a") > 0 })
		})
	}
	each(func(d *diffSubject) { d.stop() })

	theirs, ours := subjects[0], subjects[1]
	for name := range theirs.rec {
		assert.Equal(t, theirs.rec[name].sequences(resync), ours.rec[name].sequences(resync), "handler %s", name)
	}
	assert.Equal(t, diffCacheState(theirs.informer.GetIndexer()), diffCacheState(ours.informer.GetIndexer()))
}

// diffCacheState renders a cache's objects and indexes.
func diffCacheState(idx Indexer) []string {
	var out []string
	for _, obj := range idx.List() {
		k, rv, _ := diffKeyRV(obj)
		out = append(out, "obj "+k+"@"+rv)
	}
	for name := range diffIndexers {
		values := idx.ListIndexFuncValues(name)
		sort.Strings(values)
		for _, v := range values {
			keys, err := idx.IndexKeys(name, v)
			if err != nil {
				out = append(out, "error "+err.Error())
			}
			sort.Strings(keys)
			out = append(out, fmt.Sprintf("index %s[%s]=%s", name, v, strings.Join(keys, ",")))
		}
	}
	sort.Strings(out)
	return out
}

func TestDifferentialInformerMatchesClientGo(t *testing.T) {
	for _, mode := range []struct {
		name              string
		watchList, resync bool
	}{
		{"watch-list", true, false},
		{"list", false, false},
		{"watch-list with resync", true, true},
		{"list with resync", false, true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			diffScenario(t, mode.watchList, mode.resync)
			goleak.VerifyNone(t)
		})
	}
}
