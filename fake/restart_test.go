package fake

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/pager"
)

// The tests in this file walk the requests of a warm restart (docs/RESTART.md) against the
// fake: a snapshot taken at some resourceVersion, changes while the controller is down, then
// the probe and the resumed watch.

// downtime takes a snapshot's resourceVersion after two pods exist, then creates, updates and
// deletes while "the controller is down". It returns the snapshot's version.
func downtime(t *testing.T, s *Server) string {
	t.Helper()
	mustCreate(t, s, fakeTestPod("ns", "a")) // 2
	mustCreate(t, s, fakeTestPod("ns", "b")) // 3
	snapshotRV := s.ResourceVersion()
	mustCreate(t, s, fakeTestPod("ns", "c")) // 4
	_, err := s.Update(fakeTestPod("ns", "a", "v", "2"))
	require.NoError(t, err)      // 5
	_, err = s.Delete("ns", "b") // 6
	require.NoError(t, err)
	return snapshotRV
}

// probe sends the catch-up rule's consistent LIST with limit=1.
func probe(t *testing.T, s *Server) *corev1.PodList {
	t.Helper()
	obj, err := s.List(metav1.ListOptions{Limit: 1})
	require.NoError(t, err)
	return obj.(*corev1.PodList)
}

func TestProbeListReturnsTheCurrentResourceVersion(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	downtime(t, s)
	s.AdvanceResourceVersion(10) // writes to other resources
	list := probe(t, s)
	assert.Equal(t, "16", list.ResourceVersion)
	assert.Len(t, list.Items, 1, "one object, not the collection")
	assert.NotEmpty(t, list.Continue)
}

func TestResumeInsideTheWindowReplaysWhatChangedWhileDown(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	snapshotRV := downtime(t, s)
	assert.Equal(t, "6", probe(t, s).ResourceVersion)
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: snapshotRV, AllowWatchBookmarks: true})
	// The delete comes with the object's last state: the cache drops b, nothing of it survives.
	assert.Equal(t, []string{"ADDED c@4", "MODIFIED a@5", "DELETED b@6"}, nextSummaries(t, w, 3))
	assert.Equal(t, RequestCounts{ProbeLists: 1, ResumedWatches: 1}, s.RequestCounts())
	assert.Zero(t, s.RequestCounts().FullSyncs())
}

// On a quiet resource the target is past every event of its own; only a bookmark passes it. A
// catch-up watch with a 3 s timeout gets the server's pre-timeout bookmark 1 s after it opens,
// not the periodic one a minute later; then it closes.
func TestQuietResourceReachesTheTargetByBookmark(t *testing.T) {
	s, clk := newFakeTestServer(t, Options{})
	snapshotRV := downtime(t, s)
	s.AdvanceResourceVersion(4)
	target := probe(t, s).ResourceVersion
	require.Equal(t, "10", target)
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: snapshotRV, AllowWatchBookmarks: true, TimeoutSeconds: ptrTo(int64(3))})
	assert.Equal(t, []string{"ADDED c@4", "MODIFIED a@5", "DELETED b@6"}, nextSummaries(t, w, 3))
	clk.Step(time.Second)
	assert.Equal(t, "BOOKMARK @10", eventSummary(nextEvent(t, w)))
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "timer re-armed")
	clk.Step(2 * time.Second)
	requireClosed(t, w)
}

func TestResumeOutsideTheWindowIs410(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{HistorySize: 2})
	snapshotRV := downtime(t, s)
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: snapshotRV, AllowWatchBookmarks: true})
	ev := nextEvent(t, w)
	require.Equal(t, watch.Error, ev.Type)
	err := apierrors.FromObject(ev.Object)
	assert.True(t, apierrors.IsResourceExpired(err), "got %v", err)
	assert.Equal(t, "too old resource version: 3 (4)", ev.Object.(*metav1.Status).Message)
	requireClosed(t, w)
}

// A snapshot from another cluster, or from before an etcd restore without a revision bump, is
// newer than the server. The probe shows it; a plain watch from it is accepted and silent, as on
// the API server; a LIST not older than it is "too large".
func TestSnapshotNewerThanTheServer(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a")) // 2
	const snapshotRV = "50"
	assert.Equal(t, "2", probe(t, s).ResourceVersion)

	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: snapshotRV, AllowWatchBookmarks: true})
	mustCreate(t, s, fakeTestPod("ns", "b")) // 3: not newer than 50, not sent
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("a watch from a future version got %v", eventSummary(ev))
	default:
	}

	_, err := s.List(metav1.ListOptions{ResourceVersion: snapshotRV, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	assert.True(t, isTooLargeRV(err), "got %v", err)
	assert.Equal(t, "Timeout: Too large resource version: 50, current: 3", err.Error())
}

func TestRequestKinds(t *testing.T) {
	yes, no := ptrTo(true), ptrTo(false)
	for _, c := range []struct {
		r    Request
		want RequestKind
	}{
		{Request{Verb: VerbList}, FullList},
		{Request{Verb: VerbList, Options: metav1.ListOptions{Limit: 500}}, FullList},
		{Request{Verb: VerbList, Options: metav1.ListOptions{Limit: 1, ResourceVersion: "0"}}, FullList},
		{Request{Verb: VerbList, Options: metav1.ListOptions{Limit: 1}}, ProbeList},
		{Request{Verb: VerbList, Options: metav1.ListOptions{Limit: 1, Continue: "x"}}, ListPage},
		{Request{Verb: VerbWatch}, InitialWatch},
		{Request{Verb: VerbWatch, Options: metav1.ListOptions{ResourceVersion: "0"}}, InitialWatch},
		{Request{Verb: VerbWatch, Options: metav1.ListOptions{ResourceVersion: "7", SendInitialEvents: yes}}, InitialWatch},
		{Request{Verb: VerbWatch, Options: metav1.ListOptions{SendInitialEvents: no}}, ResumedWatch},
		{Request{Verb: VerbWatch, Options: metav1.ListOptions{ResourceVersion: "7"}}, ResumedWatch},
	} {
		assert.Equal(t, c.want, c.r.Kind(), "%+v", c.r)
	}
}

// A paginated full list counts once as a full list and once per further page; failed requests
// count too.
func TestRequestCountsOfAPaginatedSync(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		mustCreate(t, s, fakeTestPod("ns", name))
	}
	p := pager.New(func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) { return s.List(o) })
	p.PageSize = 2
	_, _, err := p.List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	s.FailNextWatches(1, nil)
	_, err = s.Watch(metav1.ListOptions{ResourceVersion: "6"})
	require.Error(t, err)
	c := s.RequestCounts()
	assert.Equal(t, RequestCounts{FullLists: 1, ListPages: 2, ResumedWatches: 1}, c)
	assert.Equal(t, 1, c.FullSyncs())
	s.ResetRequests()
	assert.Equal(t, RequestCounts{}, s.RequestCounts())
}
