package cache

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/fake"
)

// diffServer drives a fake API server with a small script vocabulary.
type diffServer struct {
	*fake.Server
	gen int
}

// newDiffServer serves pods; in list mode it refuses watch-list, so
// reflectors LIST.
func newDiffServer(watchList bool) *diffServer {
	return &diffServer{Server: fake.MustNew(fake.Options{Object: &v1.Pod{}, WatchListUnsupported: !watchList})}
}

// apply creates, updates (always changing a label, so the server does not
// skip it) or deletes pod ns/name.
func (s *diffServer) apply(t watch.EventType, name string, labels ...string) {
	var err error
	switch t {
	case watch.Added:
		_, err = s.Create(newTestPod("ns", name, "", labels...))
	case watch.Modified:
		s.gen++
		_, err = s.Update(newTestPod("ns", name, "", append(labels, "gen", strconv.Itoa(s.gen))...))
	case watch.Deleted:
		_, err = s.Delete("ns", name)
	}
	if err != nil {
		panic(err)
	}
}

func (s *diffServer) rv() int {
	n, _ := strconv.Atoi(s.ResourceVersion())
	return n
}

// missWhile makes the changes f applies invisible to open watches: events
// are held, the history is compacted and the watches are closed, so
// reflectors get 410 when they resume and see the changes only by
// relisting.
func (s *diffServer) missWhile(f func()) {
	release := s.HoldEvents()
	defer release()
	f()
	s.Compact()
	s.CloseWatches()
}

// block makes every list and watch fail.
func (s *diffServer) block() {
	s.FailNextLists(1<<20, fake.InternalError("blocked by the script"))
	s.FailNextWatches(1<<20, fake.InternalError("blocked by the script"))
}

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

// diffEventually polls cond, on the fake clock inside a synctest bubble.
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
func diffScenario(t *testing.T, mode storageMode, watchList, resync bool) {
	informerPeriod := time.Duration(0)
	if resync {
		informerPeriod = time.Second
	}
	theirsSrv, oursSrv := newDiffServer(watchList), newDiffServer(watchList)
	subjects := []*diffSubject{
		{name: "client-go", server: theirsSrv, shutDown: clientcache.ShutDownEventHandler,
			informer: clientcache.NewSharedIndexInformer(theirsSrv, &v1.Pod{}, informerPeriod, diffIndexers)},
		{name: "openinformer", server: oursSrv, shutDown: ShutDownEventHandler,
			informer: mode.newInformer(oursSrv, &v1.Pod{}, informerPeriod, diffIndexers)},
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
		marker = oursSrv.rv()
		require.Equal(t, marker, theirsSrv.rv(), "scripts in lockstep")
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
		d.server.CloseWatches()
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
		d.server.missWhile(func() {
			d.server.apply(watch.Deleted, "c")
			d.server.apply(watch.Modified, "d", "app", "y")
			d.server.apply(watch.Added, "f", "app", "x")
			d.server.apply(watch.Modified, "marker")
		})
	})
	marker = oursSrv.rv()
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
		gateOff           clientfeatures.Feature
	}{
		{name: "watch-list", watchList: true},
		{name: "list"},
		{name: "watch-list with resync", watchList: true, resync: true},
		{name: "list with resync", resync: true},
		{name: "list without AtomicFIFO", gateOff: clientfeatures.AtomicFIFO},
		{name: "watch-list without batch processing", watchList: true, gateOff: clientfeatures.InOrderInformersBatchProcess},
	} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.gateOff != "" {
				// Both informers read the same client-go gates.
				clientfeaturestesting.SetFeatureDuringTest(t, mode.gateOff, false)
			}
			// The Reflector's backoff after 410 and closed watches runs on
			// the bubble's fake clock, so the scenario takes no real time.
			forEachStorageMode(t, func(t *testing.T, storage storageMode) {
				synctest.Test(t, func(t *testing.T) { diffScenario(t, storage, mode.watchList, mode.resync) })
				goleak.VerifyNone(t)
			})
		})
	}
}
