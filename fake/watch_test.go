package fake

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestWatchFromResourceVersionReplaysHistory(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a")) // 2
	mustCreate(t, s, fakeTestPod("ns", "b")) // 3
	_, err := s.Update(fakeTestPod("ns", "a", "v", "1"))
	require.NoError(t, err) // 4

	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "2"})
	_, err = s.Delete("ns", "b") // 5
	require.NoError(t, err)
	assert.Equal(t, []string{"ADDED b@3", "MODIFIED a@4", "DELETED b@5"}, nextSummaries(t, w, 3))
}

func TestWatchUnversionedStartsWithState(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a"))
	mustCreate(t, s, fakeTestPod("ns", "b"))
	for _, rv := range []string{"", "0"} {
		t.Run("rv="+rv, func(t *testing.T) {
			// Legacy semantics: synthetic ADDED for the current state, then changes.
			w := startWatch(t, s, metav1.ListOptions{ResourceVersion: rv})
			assert.Equal(t, []string{"ADDED a@2", "ADDED b@3"}, nextSummaries(t, w, 2))
		})
	}
	t.Run("sendInitialEvents=false starts now", func(t *testing.T) {
		w := startWatch(t, s, metav1.ListOptions{SendInitialEvents: ptrTo(false),
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
		mustCreate(t, s, fakeTestPod("ns", "c"))
		assert.Equal(t, "ADDED c@4", eventSummary(nextEvent(t, w)))
	})
}

func TestWatchTooOldIs410ErrorEvent(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{HistorySize: 2})
	for i := range 4 {
		mustCreate(t, s, fakeTestPod("ns", fmt.Sprint(i))) // 2..5; window keeps 4,5
	}
	// The watch cache accepts the request and reports the bad starting point as the only event.
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "2"})
	ev := nextEvent(t, w)
	require.Equal(t, watch.Error, ev.Type)
	err := apierrors.FromObject(ev.Object)
	assert.True(t, apierrors.IsResourceExpired(err), "got %v", err)
	assert.Equal(t, "too old resource version: 2 (3)", ev.Object.(*metav1.Status).Message)
	requireClosed(t, w)

	// The oldest RV still served is the one just before the oldest kept event.
	w = startWatch(t, s, metav1.ListOptions{ResourceVersion: "3"})
	assert.Equal(t, []string{"ADDED 2@4", "ADDED 3@5"}, nextSummaries(t, w, 2))
}

func TestWatchFutureResourceVersion(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a")) // 2

	// A plain watch from a future RV is accepted by the watch cache; it only sends newer events.
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "3"})
	mustCreate(t, s, fakeTestPod("ns", "b")) // 3, not newer than 3
	mustCreate(t, s, fakeTestPod("ns", "c")) // 4
	assert.Equal(t, "ADDED c@4", eventSummary(nextEvent(t, w)))

	// A watch-list request needs the cache to reach the RV; beyond it the server answers "Too
	// large resource version" (a Timeout status with cause ResourceVersionTooLarge).
	w = startWatch(t, s, metav1.ListOptions{ResourceVersion: "99", SendInitialEvents: ptrTo(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	ev := nextEvent(t, w)
	require.Equal(t, watch.Error, ev.Type)
	assert.True(t, isTooLargeRV(apierrors.FromObject(ev.Object)))
	assert.Contains(t, ev.Object.(*metav1.Status).Message, "Too large resource version: 99, current: 4")
	requireClosed(t, w)
}

func TestWatchSelectorTransitions(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1", LabelSelector: "app=web"})
	mustCreate(t, s, fakeTestPod("ns", "a", "app", "db")) // 2, outside
	_, err := s.Update(fakeTestPod("ns", "a", "app", "web"))
	require.NoError(t, err) // 3, enters
	_, err = s.Update(fakeTestPod("ns", "a", "app", "web", "x", "y"))
	require.NoError(t, err) // 4, stays
	_, err = s.Update(fakeTestPod("ns", "a", "app", "db"))
	require.NoError(t, err) // 5, leaves
	mustCreate(t, s, fakeTestPod("ns", "b", "app", "web"))
	_, err = s.Delete("ns", "b")
	require.NoError(t, err) // 7

	// Leaving the selector is a DELETED carrying the last matching state at the change's RV.
	assert.Equal(t, []string{"ADDED a@3", "MODIFIED a@4", "DELETED a@5", "ADDED b@6", "DELETED b@7"}, nextSummaries(t, w, 5))
}

func TestWatchLeavingSelectorCarriesPreviousState(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a", "app", "web"))
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "2", LabelSelector: "app=web"})
	_, err := s.Update(fakeTestPod("ns", "a", "app", "db"))
	require.NoError(t, err)
	ev := nextEvent(t, w)
	assert.Equal(t, watch.Deleted, ev.Type)
	assert.Equal(t, "web", ev.Object.(*corev1.Pod).Labels["app"])
	assert.Equal(t, "3", ev.Object.(*corev1.Pod).ResourceVersion)
}

func TestWatchNamespaceViewAndFieldSelector(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	w := startWatch(t, s.Namespace("b"), metav1.ListOptions{ResourceVersion: "1", FieldSelector: "metadata.name!=skip"})
	mustCreate(t, s, fakeTestPod("a", "x"))
	mustCreate(t, s, fakeTestPod("b", "skip"))
	mustCreate(t, s, fakeTestPod("b", "y"))
	assert.Equal(t, "ADDED y@4", eventSummary(nextEvent(t, w)))
	assert.Equal(t, "b", s.Requests()[0].Namespace)
}

func TestWatchListStreamsStateThenEndBookmark(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a", "app", "web"))
	mustCreate(t, s, fakeTestPod("ns", "b"))
	w := startWatch(t, s, metav1.ListOptions{SendInitialEvents: ptrTo(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	assert.Equal(t, []string{"ADDED a@2", "ADDED b@3", "BOOKMARK @3"}, nextSummaries(t, w, 3))
	w2 := startWatch(t, s, metav1.ListOptions{SendInitialEvents: ptrTo(true), LabelSelector: "app=web",
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true, ResourceVersion: "2"})
	assert.Equal(t, "ADDED a@2", eventSummary(nextEvent(t, w2)))
	bm := nextEvent(t, w2)
	require.Equal(t, watch.Bookmark, bm.Type)
	assert.Equal(t, "3", bm.Object.(*corev1.Pod).ResourceVersion, "the end bookmark is at the current RV")
	assert.Equal(t, map[string]string{metav1.InitialEventsAnnotationKey: "true"}, bm.Object.(*corev1.Pod).Annotations)
	mustCreate(t, s, fakeTestPod("ns", "c", "app", "web"))
	assert.Equal(t, "ADDED c@4", eventSummary(nextEvent(t, w2)))
}

func TestWatchListValidation(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	// apimachinery's validateWatchOptions, as called by the API server's handler.
	_, err := s.Watch(metav1.ListOptions{SendInitialEvents: ptrTo(true), AllowWatchBookmarks: true})
	assert.True(t, apierrors.IsInvalid(err), "sendInitialEvents without NotOlderThan: %v", err)
	_, err = s.Watch(metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	assert.True(t, apierrors.IsInvalid(err), "resourceVersionMatch without sendInitialEvents: %v", err)

	// Without allowWatchBookmarks the server streams the state but, having no way to say so,
	// never marks its end (cacher isListWatchRequest).
	mustCreate(t, s, fakeTestPod("ns", "a"))
	w := startWatch(t, s, metav1.ListOptions{SendInitialEvents: ptrTo(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	mustCreate(t, s, fakeTestPod("ns", "b"))
	assert.Equal(t, []string{"ADDED a@2", "ADDED b@3"}, nextSummaries(t, w, 2))

	// With the WatchList feature off the server rejects the request; client-go falls back to LIST.
	off, _ := newFakeTestServer(t, Options{WatchListUnsupported: true})
	assert.True(t, off.IsWatchListSemanticsUnSupported())
	_, err = off.Watch(metav1.ListOptions{SendInitialEvents: ptrTo(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	assert.True(t, apierrors.IsInvalid(err), "got %v", err)
}

func TestPeriodicBookmarks(t *testing.T) {
	s, clk := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a")) // 2
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "2", AllowWatchBookmarks: true})

	// Nothing newer than the watch's start yet: the minute passes without a bookmark.
	clk.Step(time.Minute)
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "timer re-armed")
	mustCreate(t, s, fakeTestPod("ns", "b")) // 3
	assert.Equal(t, "ADDED b@3", eventSummary(nextEvent(t, w)))

	clk.Step(time.Minute)
	assert.Equal(t, "BOOKMARK @3", eventSummary(nextEvent(t, w)))
	clk.Step(time.Minute)
	assert.Equal(t, "BOOKMARK @3", eventSummary(nextEvent(t, w)))

	// Without allowWatchBookmarks there are none.
	plain := startWatch(t, s, metav1.ListOptions{ResourceVersion: "3"})
	clk.Step(time.Minute)
	assert.Equal(t, "BOOKMARK @3", eventSummary(nextEvent(t, w)))
	mustCreate(t, s, fakeTestPod("ns", "c"))
	assert.Equal(t, "ADDED c@4", eventSummary(nextEvent(t, plain)))
}

func TestWatchTimeoutWithPreTimeoutBookmark(t *testing.T) {
	s, clk := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a"))
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true, TimeoutSeconds: ptrTo(int64(30))})
	assert.Equal(t, "ADDED a@2", eventSummary(nextEvent(t, w)))

	// The API server sends a bookmark 2s before the deadline, then closes the watch.
	clk.Step(28 * time.Second)
	assert.Equal(t, "BOOKMARK @2", eventSummary(nextEvent(t, w)))
	clk.Step(time.Second)
	mustCreate(t, s, fakeTestPod("ns", "b"))
	assert.Equal(t, "ADDED b@3", eventSummary(nextEvent(t, w)))
	clk.Step(time.Second)
	requireClosed(t, w)
}

func TestDefaultWatchTimeout(t *testing.T) {
	s, clk := newFakeTestServer(t, Options{DefaultWatchTimeout: 30 * time.Minute})
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	clk.Step(30 * time.Minute)
	requireClosed(t, w)
}

func TestSlowConsumerNeverBlocksOrLoses(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{HistorySize: 10})
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	const n = 5000 // far beyond the 100-event channel that makes client-go's fake tracker panic
	for i := range n {
		mustCreate(t, s, fakeTestPod("ns", fmt.Sprintf("p%05d", i)))
	}
	for i := range n {
		ev := nextEvent(t, w)
		require.Equal(t, fmt.Sprintf("ADDED p%05d@%d", i, i+2), eventSummary(ev))
	}
}

func TestWatchEventsAreCopies(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	w1 := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	w2 := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	mustCreate(t, s, fakeTestPod("ns", "a"))
	nextEvent(t, w1).Object.(*corev1.Pod).Labels = map[string]string{"mutated": "1"}
	assert.Empty(t, nextEvent(t, w2).Object.(*corev1.Pod).Labels)
	got, err := s.Get("ns", "a")
	require.NoError(t, err)
	assert.Empty(t, got.(*corev1.Pod).Labels)
}

func TestStopAndContextEndTheWatch(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	w, err := s.Watch(metav1.ListOptions{ResourceVersion: "1"})
	require.NoError(t, err)
	mustCreate(t, s, fakeTestPod("ns", "a")) // queued, never read
	w.Stop()
	w.Stop()
	for range w.ResultChan() {
	}

	ctx, cancel := context.WithCancel(context.Background())
	w, err = s.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "1"})
	require.NoError(t, err)
	cancel()
	for range w.ResultChan() {
	}
	_, err = s.WatchWithContext(ctx, metav1.ListOptions{})
	assert.ErrorIs(t, err, context.Canceled)
}
