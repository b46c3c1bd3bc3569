package fake

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
)

func TestErrorConstructorsMatchClientChecks(t *testing.T) {
	err := TooManyRequests(3)
	assert.True(t, apierrors.IsTooManyRequests(err))
	delay, ok := apierrors.SuggestsClientDelay(err)
	assert.True(t, ok)
	assert.Equal(t, 3, delay)

	assert.True(t, apierrors.IsInternalError(InternalError("boom")))
	assert.True(t, apierrors.IsResourceExpired(Expired("old")))
	assert.True(t, apierrors.IsGone(Gone("old")))
	assert.True(t, utilnet.IsConnectionRefused(ConnectionRefused()))
	assert.Contains(t, ConnectionRefused().Error(), "connection refused")
}

func TestFailNextListsAndWatches(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	s.FailNextLists(2, TooManyRequests(1))
	s.FailNextLists(1, ConnectionRefused())
	_, err := s.List(metav1.ListOptions{})
	assert.True(t, apierrors.IsTooManyRequests(err))
	_, err = s.List(metav1.ListOptions{})
	assert.True(t, apierrors.IsTooManyRequests(err))
	_, err = s.List(metav1.ListOptions{})
	assert.True(t, utilnet.IsConnectionRefused(err))
	_, err = s.List(metav1.ListOptions{})
	assert.NoError(t, err)

	s.FailNextWatches(1, InternalError("etcd is sad"))
	_, err = s.Watch(metav1.ListOptions{})
	assert.True(t, apierrors.IsInternalError(err))
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	mustCreate(t, s, fakeTestPod("ns", "a"))
	assert.Equal(t, "ADDED a@2", eventSummary(nextEvent(t, w)))

	// Failed requests are recorded too.
	reqs := s.Requests()
	require.Len(t, reqs, 6)
	assert.Equal(t, VerbList, reqs[0].Verb)
	assert.Equal(t, VerbWatch, reqs[5].Verb)
	assert.Equal(t, "1", reqs[5].Options.ResourceVersion)
}

// A nil error still fails the request, with DefaultFault, for lists and watches alike.
func TestFailNextWithNilErrorInjectsTheDefaultFault(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	s.FailNextLists(1, nil)
	s.FailNextWatches(1, nil)
	_, err := s.List(metav1.ListOptions{})
	assert.Equal(t, DefaultFault(), err)
	_, err = s.Watch(metav1.ListOptions{})
	assert.Equal(t, DefaultFault(), err)
	assert.True(t, apierrors.IsInternalError(err))
	_, err = s.List(metav1.ListOptions{})
	assert.NoError(t, err)
}

func TestRequestsAreCopies(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	timeout := int64(5)
	w := startWatch(t, s, metav1.ListOptions{TimeoutSeconds: &timeout, LabelSelector: "a=b"})
	_ = w
	timeout = 99
	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, int64(5), *reqs[0].Options.TimeoutSeconds)
	*reqs[0].Options.TimeoutSeconds = 7
	assert.Equal(t, int64(5), *s.Requests()[0].Options.TimeoutSeconds)
	s.ResetRequests()
	assert.Empty(t, s.Requests())
}

func TestCloseWatches(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	w1 := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	w2 := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	assert.Equal(t, 2, s.OpenWatches())
	assert.Equal(t, 2, s.CloseWatches())
	assert.Equal(t, 0, s.OpenWatches())
	requireClosed(t, w1)
	requireClosed(t, w2)
	assert.Equal(t, 0, s.CloseWatches())
}

func TestCloseWatchesAfterN(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	s.CloseWatchesAfter(2)
	for i := range 4 {
		mustCreate(t, s, fakeTestPod("ns", fmt.Sprint(i)))
	}
	assert.Equal(t, []string{"ADDED 0@2", "ADDED 1@3"}, nextSummaries(t, w, 2))
	requireClosed(t, w)
	// A client resumes from the last RV it saw and misses nothing.
	w = startWatch(t, s, metav1.ListOptions{ResourceVersion: "3"})
	assert.Equal(t, []string{"ADDED 2@4", "ADDED 3@5"}, nextSummaries(t, w, 2))
}

func TestSendWatchErrorMidStream(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	mustCreate(t, s, fakeTestPod("ns", "a"))
	s.SendWatchError(Expired("too old resource version: 1 (2)"))
	mustCreate(t, s, fakeTestPod("ns", "b")) // after the error: never delivered on this watch
	assert.Equal(t, "ADDED a@2", eventSummary(nextEvent(t, w)))
	ev := nextEvent(t, w)
	require.Equal(t, watch.Error, ev.Type)
	assert.True(t, apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)))
	requireClosed(t, w)

	w = startWatch(t, s, metav1.ListOptions{ResourceVersion: "3"})
	s.SendWatchError(errors.New("plain error"))
	ev = nextEvent(t, w)
	assert.True(t, apierrors.IsInternalError(apierrors.FromObject(ev.Object)), "non-API errors become 500")
}

func TestCompactExpiresOldResourceVersions(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a")) // 2
	mustCreate(t, s, fakeTestPod("ns", "b")) // 3
	open := startWatch(t, s, metav1.ListOptions{ResourceVersion: "3"})
	s.Compact()

	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "2"})
	ev := nextEvent(t, w)
	require.Equal(t, watch.Error, ev.Type)
	assert.Equal(t, int32(410), ev.Object.(*metav1.Status).Code)
	_, err := s.List(metav1.ListOptions{ResourceVersion: "2", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	assert.True(t, apierrors.IsResourceExpired(err), "got %v", err)

	// The current RV still works, and open watches are unaffected.
	w = startWatch(t, s, metav1.ListOptions{ResourceVersion: "3"})
	mustCreate(t, s, fakeTestPod("ns", "c"))
	assert.Equal(t, "ADDED c@4", eventSummary(nextEvent(t, w)))
	assert.Equal(t, "ADDED c@4", eventSummary(nextEvent(t, open)))
}

func TestRestartStartsANewEpoch(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a")) // 2
	first, err := s.List(metav1.ListOptions{})
	require.NoError(t, err)
	mustCreate(t, s, fakeTestPod("ns", "b")) // 3
	page, err := s.List(metav1.ListOptions{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, page.(*corev1.PodList).Continue)
	open := startWatch(t, s, metav1.ListOptions{ResourceVersion: "3"})

	s.Restart(1000)
	requireClosed(t, open)
	assert.Equal(t, "1003", s.ResourceVersion())

	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: first.(*corev1.PodList).ResourceVersion})
	ev := nextEvent(t, w)
	require.Equal(t, watch.Error, ev.Type)
	assert.Equal(t, int32(410), ev.Object.(*metav1.Status).Code)
	_, err = s.List(metav1.ListOptions{Limit: 1, Continue: page.(*corev1.PodList).Continue})
	assert.True(t, apierrors.IsResourceExpired(err), "got %v", err)

	list, err := s.List(metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1003", list.(*corev1.PodList).ResourceVersion)
	assert.Equal(t, []string{"ns/a", "ns/b"}, listNames(t, list))
	mustCreate(t, s, fakeTestPod("ns", "c"))
	assert.Equal(t, "1004", s.ResourceVersion())
}

func TestHoldEventsDelaysWithoutLoss(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	release := s.HoldEvents()
	for i := range 3 {
		mustCreate(t, s, fakeTestPod("ns", fmt.Sprint(i)))
	}
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("event delivered while held: %v", eventSummary(ev))
	case <-time.After(50 * time.Millisecond):
	}
	release()
	release()
	assert.Equal(t, []string{"ADDED 0@2", "ADDED 1@3", "ADDED 2@4"}, nextSummaries(t, w, 3))

	// A held watch can still be closed.
	release = s.HoldEvents()
	defer release()
	mustCreate(t, s, fakeTestPod("ns", "x"))
	s.CloseWatches()
	requireClosed(t, w)
}

func TestDropInitialEventsEnd(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a"))
	s.DropInitialEventsEnd(true)
	streaming := metav1.ListOptions{SendInitialEvents: ptrTo(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	w := startWatch(t, s, streaming)
	assert.Equal(t, "ADDED a@2", eventSummary(nextEvent(t, w)))
	mustCreate(t, s, fakeTestPod("ns", "b"))
	assert.Equal(t, "ADDED b@3", eventSummary(nextEvent(t, w)), "live events follow the initial ones, with no bookmark between")

	s.DropInitialEventsEnd(false)
	w = startWatch(t, s, streaming)
	assert.Equal(t, []string{"ADDED a@2", "ADDED b@3", "BOOKMARK @3"}, nextSummaries(t, w, 3))
}

func TestReturnNilWatches(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	s.ReturnNilWatches(2)
	for range 2 {
		w, err := s.Watch(metav1.ListOptions{})
		assert.Nil(t, w)
		assert.NoError(t, err)
	}
	w := startWatch(t, s, metav1.ListOptions{})
	assert.NotNil(t, w)
	assert.Len(t, s.Requests(), 3, "nil watches are recorded")
}

// InterruptNextWatches ends the next accepted watches after their budget: with the ERROR event
// given, or closed; a watch refused by FailNextWatches does not take an interruption, and
// watches after the interrupted ones run on.
func TestInterruptNextWatches(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	for _, n := range []string{"a", "b", "c"} {
		mustCreate(t, s, fakeTestPod("ns", n))
	}
	s.FailNextWatches(1, TooManyRequests(1))
	s.InterruptNextWatches(1, 2, Expired("too old resource version: 1 (2)"))
	s.InterruptNextWatches(1, 0, Expired("gone at once"))
	s.InterruptNextWatches(1, 1, nil)
	s.InterruptNextWatches(1, 0, nil)

	_, err := s.Watch(metav1.ListOptions{ResourceVersion: "1"})
	require.True(t, apierrors.IsTooManyRequests(err), "the refused request takes no interruption")

	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	assert.Equal(t, []string{"ADDED a@2", "ADDED b@3"}, nextSummaries(t, w, 2))
	ev := nextEvent(t, w)
	require.Equal(t, watch.Error, ev.Type)
	assert.True(t, apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)))
	requireClosed(t, w)

	w = startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	ev = nextEvent(t, w)
	require.Equal(t, watch.Error, ev.Type, "no event before the error")
	assert.Contains(t, apierrors.FromObject(ev.Object).Error(), "gone at once")
	requireClosed(t, w)

	w = startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	assert.Equal(t, []string{"ADDED a@2"}, nextSummaries(t, w, 1))
	requireClosed(t, w)

	w = startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	requireClosed(t, w)

	w = startWatch(t, s, metav1.ListOptions{ResourceVersion: "3"})
	assert.Equal(t, []string{"ADDED c@4"}, nextSummaries(t, w, 1))
	mustCreate(t, s, fakeTestPod("ns", "d"))
	assert.Equal(t, []string{"ADDED d@5"}, nextSummaries(t, w, 1), "no interruption left")
	w.Stop()
}
