package cache

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/reflectorfsm"
)

// faultyServerRun is what a reflector left behind after running against a
// faulty fake server for a while.
type faultyServerRun struct {
	requests []string
	contents []string
	replaces int
}

// runAgainstFaultyServer runs impl's Reflector (Run, with its backoff) in
// a synctest bubble against a fake server with three pods and the fault
// setup applies, for d of the bubble's time.
func runAgainstFaultyServer(t *testing.T, ours bool, noWL bool, setup func(*fake.Server), d time.Duration) faultyServerRun {
	var out faultyServerRun
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, WatchListUnsupported: noWL})
		for _, name := range []string{"a", "b", "c"} {
			_, err := srv.Create(newTestPod("ns", name, ""))
			require.NoError(t, err)
		}
		setup(srv)
		store := &reflectorNotifyingStore{reflectorTestStore: newReflectorTestStore(), changed: make(chan struct{}, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if ours {
				NewReflector(srv, &v1.Pod{}, store, 0).RunWithContext(ctx)
			} else {
				clientcache.NewReflector(srv, &v1.Pod{}, store, 0).RunWithContext(ctx)
			}
		}()
		time.Sleep(d)
		synctest.Wait()
		for _, r := range srv.Requests() {
			out.requests = append(out.requests, reflectorCall{Watch: r.Verb == fake.VerbWatch, Options: r.Options}.String())
		}
		out.contents, out.replaces = store.contents(), store.replaces()
		cancel()
		<-done
	})
	return out
}

// TestF9_MissingEndBookmarkFallsBackToListAndWatch: a server that never
// sends the bookmark ending a watch-list's initial events leaves client-
// go's Reflector unsynced forever (kubernetes#140890); ours ends each
// stream after EndBookmarkPatience without an event, and after the second
// such stream in a row lists and watches, reporting why once.
func TestF9_MissingEndBookmarkFallsBackToListAndWatch(t *testing.T) {
	reported := captureReportedErrors(t)
	drop := func(s *fake.Server) { s.DropInitialEventsEnd(true) }
	theirs := runAgainstFaultyServer(t, false, false, drop, 30*time.Minute)
	assert.Zero(t, theirs.replaces, "client-go never syncs")
	for _, r := range theirs.requests {
		assert.Contains(t, r, "sendInitialEvents=true", "client-go only ever streams")
	}
	assert.Empty(t, reported.take())

	ours := runAgainstFaultyServer(t, true, false, drop, 30*time.Minute)
	assert.Equal(t, 1, ours.replaces, "synced once, by a LIST")
	assert.Equal(t, []string{"ns/a@2", "ns/b@3", "ns/c@4"}, ours.contents)
	require.GreaterOrEqual(t, len(ours.requests), 4, "%v", ours.requests)
	for i, r := range ours.requests[:2] {
		assert.Contains(t, r, "sendInitialEvents=true", "request %d", i)
	}
	assert.Equal(t, `LIST rv="0" limit=500 continue="" bookmarks=false match=""`, ours.requests[2])
	for _, r := range ours.requests[3:] {
		assert.Contains(t, r, `WATCH rv="4"`, "watches (renewed at their timeouts), no more streaming")
	}
	got := reported.take()
	require.Len(t, got, 1, "reported once: %v", got)
	assert.Contains(t, got[0], "Reflector input is faulty: 2 watch-list streams of *v1.Pod in a row went 1m0s without an event")
}

// TestF9_EndBookmarkAfterAQuietStreamSyncsByStreaming: one quiet stream is
// not enough to give up streaming; the next one, with its bookmark, syncs.
func TestF9_EndBookmarkAfterAQuietStreamSyncsByStreaming(t *testing.T) {
	reported := captureReportedErrors(t)
	ours := runAgainstFaultyServer(t, true, false, func(s *fake.Server) {
		s.DropInitialEventsEnd(true)
		go func() {
			time.Sleep(reflectorfsm.EndBookmarkPatience / 2)
			s.DropInitialEventsEnd(false)
		}()
	}, 4*time.Minute)
	assert.Equal(t, 1, ours.replaces)
	assert.Equal(t, []string{"ns/a@2", "ns/b@3", "ns/c@4"}, ours.contents)
	require.Len(t, ours.requests, 2, "%v", ours.requests)
	for _, r := range ours.requests {
		assert.Contains(t, r, "sendInitialEvents=true")
	}
	assert.Empty(t, reported.take())
}

// TestF11_NilWatchIsAFailedWatch: a Watch answering (nil, nil) crashes
// client-go's Reflector with a nil dereference; ours returns a clear error
// from ListAndWatch, which Run reports and backs off from, then recovers.
func TestF11_NilWatchIsAFailedWatch(t *testing.T) {
	assert.Panics(t, func() {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, WatchListUnsupported: true})
		srv.ReturnNilWatches(1)
		_ = clientcache.NewReflector(srv, &v1.Pod{}, newReflectorTestStore(), 0).ListAndWatch(make(chan struct{}))
	}, "client-go")

	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, WatchListUnsupported: true})
	srv.ReturnNilWatches(1)
	err := NewReflector(srv, &v1.Pod{}, newReflectorTestStore(), 0).ListAndWatch(make(chan struct{}))
	assert.ErrorIs(t, err, errNilWatch)
	assert.EqualError(t, err, "the ListerWatcher's Watch returned neither a watch nor an error")

	for _, noWL := range []bool{true, false} {
		reported := captureReportedErrors(t)
		ours := runAgainstFaultyServer(t, true, noWL, func(s *fake.Server) { s.ReturnNilWatches(2) }, time.Minute)
		assert.Equal(t, []string{"ns/a@2", "ns/b@3", "ns/c@4"}, ours.contents, "noWL=%v", noWL)
		got := reported.take()
		require.NotEmpty(t, got, "noWL=%v", noWL)
		assert.Contains(t, got[0], "Failed to watch: the ListerWatcher's Watch returned neither a watch nor an error")
	}
	goleak.VerifyNone(t)
}

// TestF10_ListRVNotAVersionReportedOnce: a LIST answered with
// resourceVersion "abc" makes both reflectors send the same requests (the
// watch from "abc"); ours reports it once.
func TestF10_ListRVNotAVersionReportedOnce(t *testing.T) {
	reported := captureReportedErrors(t)
	a1 := newTestPod("ns", "a", "1")
	sc := reflectorScenario{name: "rv abc", noWL: true, steps: func() []reflectorStep {
		return []reflectorStep{
			listStep(reflectorPodList("abc", "", a1), nil),
			watchStep(reflectorExpired()),
			listStep(reflectorPodList("abc", "", a1), nil),
			watchStep(nil, reflectorEvent(watch.Added, "b", "12")),
		}
	}}
	theirs := runReflectorScenario(t, sc, false)
	assert.Empty(t, reported.take())
	ours := runReflectorScenario(t, sc, true)
	assert.Equal(t, callStrings(theirs.calls), callStrings(ours.calls))
	assert.Equal(t, theirs.contents, ours.contents)
	got := reported.take()
	require.Len(t, got, 1, "%v", got)
	assert.True(t, strings.HasPrefix(got[0], `Reflector input is faulty: the list of *v1.Pod has resourceVersion "abc"`), got[0])
	assert.False(t, errors.Is(nil, errNilWatch))
}

// TestF9_InformerSyncsWithoutEndBookmark: the user-facing side of the
// fallback, an informer on a server that drops the end bookmark syncs
// within three minutes, where client-go's never does.
func TestF9_InformerSyncsWithoutEndBookmark(t *testing.T) {
	captureReportedErrors(t)
	for _, ours := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
			_, err := srv.Create(newTestPod("ns", "a", ""))
			require.NoError(t, err)
			srv.DropInitialEventsEnd(true)
			var inf clientcache.SharedIndexInformer = clientcache.NewSharedIndexInformer(srv, &v1.Pod{}, 0, nil)
			if ours {
				inf = NewSharedIndexInformer(srv, &v1.Pod{}, 0, nil)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); inf.RunWithContext(ctx) }()
			time.Sleep(3 * time.Minute)
			synctest.Wait()
			assert.Equal(t, ours, inf.HasSynced(), "ours=%v", ours)
			assert.Equal(t, map[bool]int{true: 1, false: 0}[ours], len(inf.GetStore().ListKeys()), "ours=%v", ours)
			cancel()
			<-done
		})
	}
	goleak.VerifyNone(t)
}
