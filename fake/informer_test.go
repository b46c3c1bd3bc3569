package fake

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"
)

// informerTestRecorder records what an informer's handler saw, per key, and checks on the fly
// that every OnUpdate's old object is the state the handler saw last for that key.
type informerTestRecorder struct {
	mu       sync.Mutex
	last     map[string]*corev1.Pod // nil value: last call was a delete
	calls    map[string][]string
	problems []string
}

func newInformerTestRecorder() *informerTestRecorder {
	return &informerTestRecorder{last: map[string]*corev1.Pod{}, calls: map[string][]string{}}
}

func (r *informerTestRecorder) handler() clientcache.ResourceEventHandler {
	return clientcache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { r.saw("add", nil, obj.(*corev1.Pod)) },
		UpdateFunc: func(oldObj, newObj any) {
			r.saw("update", oldObj.(*corev1.Pod), newObj.(*corev1.Pod))
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(clientcache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			r.saw("delete", nil, obj.(*corev1.Pod))
		},
	}
}

func (r *informerTestRecorder) saw(kind string, old, obj *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := obj.Namespace + "/" + obj.Name
	prev, seen := r.last[key]
	rv := mustParseRV(obj.ResourceVersion)
	switch {
	case kind == "add" && prev != nil:
		r.problems = append(r.problems, fmt.Sprintf("%s: add while present", key))
	case kind == "update" && (prev == nil || old.ResourceVersion != prev.ResourceVersion):
		r.problems = append(r.problems, fmt.Sprintf("%s: update from %s, last seen %v", key, old.ResourceVersion, prev))
	case kind == "delete" && prev == nil:
		r.problems = append(r.problems, fmt.Sprintf("%s: delete while absent", key))
	case seen && prev != nil && rv < mustParseRV(prev.ResourceVersion):
		r.problems = append(r.problems, fmt.Sprintf("%s: went back from %s to %s", key, prev.ResourceVersion, obj.ResourceVersion))
	}
	if kind == "delete" {
		r.last[key] = nil
	} else {
		r.last[key] = obj
	}
	r.calls[key] = append(r.calls[key], kind+"@"+obj.ResourceVersion)
}

// mismatch describes the first key whose last handler call differs from the server's state, or
// returns "" when every handler call sequence ends in the server's state.
func (r *informerTestRecorder) mismatch(s *Server) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	want := map[string]string{}
	for _, obj := range s.Objects() {
		p := obj.(*corev1.Pod)
		want[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	for key, rv := range want {
		if got := r.last[key]; got == nil || got.ResourceVersion != rv {
			return fmt.Sprintf("%s: server has RV %s, handler calls %v", key, rv, r.calls[key])
		}
	}
	for key, p := range r.last {
		if _, live := want[key]; !live && p != nil {
			return fmt.Sprintf("%s: deleted on the server, handler calls %v", key, r.calls[key])
		}
	}
	return ""
}

// checkFinal waits for the handler to catch up with the server (handlers run behind the
// cache) and asserts that every call sequence was in order.
func (r *informerTestRecorder) checkFinal(t *testing.T, s *Server) {
	t.Helper()
	var last string
	ok := assert.Eventually(t, func() bool {
		last = r.mismatch(s)
		return last == ""
	}, 20*time.Second, time.Millisecond)
	assert.True(t, ok, last)
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Empty(t, r.problems)
}

func mustParseRV(rv string) uint64 {
	n, err := parseRV(rv)
	if err != nil {
		panic(err)
	}
	return n
}

// storeMatchesServer reports whether the informer's cache holds exactly the server's objects.
func storeMatchesServer(store clientcache.Store, s *Server) bool {
	want := map[string]string{}
	for _, obj := range s.Objects() {
		p := obj.(*corev1.Pod)
		want[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	got := map[string]string{}
	for _, obj := range store.List() {
		p := obj.(*corev1.Pod)
		got[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	return fmt.Sprint(want) == fmt.Sprint(got)
}

// runFakeTestInformer starts client-go's shared informer on lw and returns a stop function that
// waits for it to exit.
func runFakeTestInformer(t *testing.T, lw clientcache.ListerWatcher, h clientcache.ResourceEventHandler) (clientcache.SharedIndexInformer, func()) {
	t.Helper()
	return runFakeTestInformerWith(t, clientcache.NewSharedIndexInformer, lw, h)
}

// fakeTestInformerConstructor is the signature shared by client-go's and
// openinformer's NewSharedIndexInformer.
type fakeTestInformerConstructor func(clientcache.ListerWatcher, runtime.Object, time.Duration, clientcache.Indexers) clientcache.SharedIndexInformer

// runFakeTestInformerWith runs an informer built by newInformer until the
// returned stop function is called, and waits for its sync.
func runFakeTestInformerWith(t *testing.T, newInformer fakeTestInformerConstructor, lw clientcache.ListerWatcher, h clientcache.ResourceEventHandler) (clientcache.SharedIndexInformer, func()) {
	t.Helper()
	inf := newInformer(lw, &corev1.Pod{}, 0, clientcache.Indexers{})
	_, err := inf.AddEventHandler(h)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	stop := func() {
		cancel()
		<-done
	}
	if !clientcache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		stop()
		t.Fatal("informer did not sync")
	}
	return inf, stop
}

func verbs(reqs []Request) []string {
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		v := r.Verb
		if r.Options.SendInitialEvents != nil && *r.Options.SendInitialEvents {
			v += "-list"
		}
		out = append(out, v)
	}
	return out
}

func TestClientGoInformerWatchListMode(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, _ := newFakeTestServer(t, Options{Objects: []runtime.Object{fakeTestPod("ns", "a"), fakeTestPod("ns", "b")}})
	rec := newInformerTestRecorder()
	inf, stop := runFakeTestInformer(t, s, rec.handler())
	defer stop()

	// The reflector streamed the initial state (watch-list) instead of listing.
	assert.Equal(t, []string{"watch-list"}, verbs(s.Requests()))
	mustCreate(t, s, fakeTestPod("ns", "c"))
	_, err := s.Update(fakeTestPod("ns", "a", "v", "2"))
	require.NoError(t, err)
	_, err = s.Delete("ns", "b")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return storeMatchesServer(inf.GetStore(), s) }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"watch-list"}, verbs(s.Requests()), "the watch-list stream continues as the watch")
	rec.checkFinal(t, s)
}

func TestClientGoInformerListMode(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, _ := newFakeTestServer(t, Options{WatchListUnsupported: true, Objects: []runtime.Object{fakeTestPod("ns", "a")}})
	rec := newInformerTestRecorder()
	inf, stop := runFakeTestInformer(t, s, rec.handler())
	defer stop()

	require.Eventually(t, func() bool { return len(s.Requests()) == 2 }, 10*time.Second, time.Millisecond)
	reqs := s.Requests()
	assert.Equal(t, []string{"list", "watch"}, verbs(reqs))
	assert.Equal(t, "2", reqs[1].Options.ResourceVersion, "the watch resumes from the list's RV")
	assert.True(t, reqs[1].Options.AllowWatchBookmarks)
	mustCreate(t, s, fakeTestPod("ns", "b"))
	require.Eventually(t, func() bool { return storeMatchesServer(inf.GetStore(), s) }, 10*time.Second, time.Millisecond)
	rec.checkFinal(t, s)
}

// A watch that breaks while changes happen, and whose resume point is then compacted away, forces
// the LIST-mode reflector through a 410 and a relist; the handler still ends on the server's state.
func TestClientGoInformerRelistsAfter410(t *testing.T) {
	defer goleak.VerifyNone(t)
	// In a bubble: the Reflector's pause before it retries passes on the
	// fake clock.
	synctest.Test(t, func(t *testing.T) {
		s, _ := newFakeTestServer(t, Options{WatchListUnsupported: true,
			Objects: []runtime.Object{fakeTestPod("ns", "a"), fakeTestPod("ns", "b")}})
		rec := newInformerTestRecorder()
		inf, stop := runFakeTestInformer(t, s, rec.handler())
		defer stop()
		require.Eventually(t, func() bool { return len(s.Requests()) == 2 }, 10*time.Second, time.Millisecond)

		// The watch delivers one event (so the reflector resumes at once instead of backing off a
		// "very short watch"), then drops; meanwhile the history it would resume from is compacted.
		release := s.HoldEvents()
		s.CloseWatchesAfter(1)
		mustCreate(t, s, fakeTestPod("ns", "d")) // 4
		_, err := s.Delete("ns", "a")            // 5
		require.NoError(t, err)
		mustCreate(t, s, fakeTestPod("ns", "c")) // 6
		s.Compact()
		release()

		require.Eventually(t, func() bool { return storeMatchesServer(inf.GetStore(), s) }, 20*time.Second, time.Millisecond)
		rec.checkFinal(t, s)
		// list, watch@3 (dropped after one event), watch@4 (410: compacted), list, watch@6.
		require.Eventually(t, func() bool { return len(s.Requests()) >= 5 }, 10*time.Second, time.Millisecond)
		reqs := s.Requests()
		assert.Equal(t, []string{"list", "watch", "watch", "list", "watch"}, verbs(reqs[:5]))
		assert.Equal(t, "4", reqs[2].Options.ResourceVersion)
		assert.Equal(t, "6", reqs[4].Options.ResourceVersion)
	})
}

// In watch-list mode a resume point older than the window is not an error (the request asks
// for state NotOlderThan it); a 410 on the watch request makes the reflector retry from "".
func TestClientGoInformerWatchListRetriesAfter410(t *testing.T) {
	defer goleak.VerifyNone(t)
	// In a bubble: the Reflector's pause before it retries passes on the
	// fake clock.
	synctest.Test(t, func(t *testing.T) {
		s, _ := newFakeTestServer(t, Options{Objects: []runtime.Object{fakeTestPod("ns", "a"), fakeTestPod("ns", "b")}})
		rec := newInformerTestRecorder()
		inf, stop := runFakeTestInformer(t, s, rec.handler())
		defer stop()

		release := s.HoldEvents()
		_, err := s.Delete("ns", "a")
		require.NoError(t, err)
		mustCreate(t, s, fakeTestPod("ns", "c"))
		s.FailNextWatches(1, Expired("too old resource version: 3 (4)"))
		s.CloseWatches()
		release()

		require.Eventually(t, func() bool { return storeMatchesServer(inf.GetStore(), s) }, 20*time.Second, time.Millisecond)
		rec.checkFinal(t, s)
		reqs := s.Requests()
		require.Len(t, reqs, 3, "%v", verbs(reqs))
		assert.Equal(t, []string{"watch-list", "watch-list", "watch-list"}, verbs(reqs))
		assert.Equal(t, "3", reqs[1].Options.ResourceVersion)
		assert.Equal(t, "", reqs[2].Options.ResourceVersion, "after 410 the RV is marked unavailable")
	})
}
