package reflectorfsm

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	errExpired   = apierrors.NewResourceExpired("too old")
	errGone      = apierrors.NewGone("gone")
	errTooLarge  = apierrors.NewTimeoutError("Too large resource version", 1)
	errTooMany   = apierrors.NewTooManyRequests("busy", 1)
	errRefused   = fmt.Errorf("dial: %w", syscall.ECONNREFUSED)
	errInternal  = apierrors.NewInternalError(errors.New("boom"))
	errForbidden = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("no"))
)

func newTestMachine(watchList bool) *Machine {
	return New(Config{
		TypeDescription: "*v1.Pod",
		UseWatchList:    watchList,
		MinWatchTimeout: 5 * time.Minute,
		MaxWatchTimeout: 10 * time.Minute,
		Rand:            func() float64 { return 0.5 },
	})
}

// syncByList takes a fresh machine through a successful list at rv.
func syncByList(t *testing.T, m *Machine, rv string) Action {
	t.Helper()
	a := m.Step(Begin{})
	require.Equal(t, List, a.Kind)
	a = m.Step(ListDone{ResourceVersion: rv})
	require.Equal(t, Replace, a.Kind)
	return m.Step(Replaced{})
}

func TestClassify(t *testing.T) {
	tooLargeCause := apierrors.NewTimeoutError("x", 1)
	tooLargeCause.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}
	tooLargeType := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonTimeout,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}}}}
	noDetails := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonTimeout, Message: "Too large resource version"}}
	for err, want := range map[error]Class{
		nil: ClassNone, errExpired: ClassExpired, errGone: ClassExpired, errTooLarge: ClassTooLargeRV,
		tooLargeCause: ClassTooLargeRV, tooLargeType: ClassTooLargeRV, noDetails: ClassOther,
		errTooMany: ClassTooManyRequests, errRefused: ClassConnectionRefused, errInternal: ClassInternal,
		errForbidden: ClassOther, errors.New("x"): ClassOther,
	} {
		assert.Equal(t, want, Classify(err), "%v", err)
	}
}

func TestF4_WatchTimeoutSpreadsOverWindow(t *testing.T) {
	for _, tc := range []struct {
		r    float64
		want int64
	}{{0, 300}, {0.5, 450}, {0.999999, 599}} {
		m := New(Config{MinWatchTimeout: 5 * time.Minute, MaxWatchTimeout: 10 * time.Minute, Rand: func() float64 { return tc.r }})
		a := syncByList(t, m, "10")
		require.Equal(t, Watch, a.Kind)
		assert.Equal(t, tc.want, *a.Options.TimeoutSeconds)
	}
}

func TestF9_WatchListRequestOptions(t *testing.T) {
	m := newTestMachine(true)
	a := m.Step(Begin{})
	require.Equal(t, WatchList, a.Kind)
	assert.Equal(t, "", a.Options.ResourceVersion)
	assert.True(t, a.Options.AllowWatchBookmarks)
	assert.True(t, *a.Options.SendInitialEvents)
	assert.Equal(t, metav1.ResourceVersionMatchNotOlderThan, a.Options.ResourceVersionMatch)
	assert.Equal(t, int64(450), *a.Options.TimeoutSeconds)
}

func TestF9_WatchListErrorHandling(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		want     Kind
		backoff  bool
		wantRV   string
		fallback bool
	}{
		{"429 backs off and retries", errTooMany, WatchList, true, "20", false},
		{"connection refused backs off and retries", errRefused, WatchList, true, "20", false},
		{"expired retries at once from latest", errExpired, WatchList, false, "", false},
		{"too large RV retries at once from latest", errTooLarge, WatchList, false, "", false},
		{"clean close without bookmark retries", nil, WatchList, false, "20", false},
		{"other error falls back to list", errForbidden, List, false, "20", true},
		{"internal error falls back to list", errInternal, List, false, "20", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMachine(true)
			m.Step(Begin{})
			m.Step(WatchListDone{Synced: true, ResourceVersion: "20"})
			m.Step(Replaced{})
			m.Step(WatchEnded{Err: errExpired})
			a := m.Step(Begin{})
			require.Equal(t, "20", a.Options.ResourceVersion)
			a = m.Step(WatchListDone{Err: tc.err})
			assert.Equal(t, tc.want, a.Kind)
			assert.Equal(t, tc.backoff, a.Backoff)
			if tc.fallback {
				assert.Equal(t, "20", a.Options.ResourceVersion)
				assert.Equal(t, tc.err, a.Note)
			} else {
				assert.Equal(t, tc.wantRV, a.Options.ResourceVersion)
			}
		})
	}
}

func TestF9_WatchListSuccessReplacesThenReusesStream(t *testing.T) {
	m := newTestMachine(true)
	m.Step(Begin{})
	m.Step(WatchListDone{Err: errExpired})
	a := m.Step(WatchListDone{Synced: true, ResourceVersion: "30"})
	assert.Equal(t, Action{Kind: Replace, ResourceVersion: "30"}, a)
	assert.Equal(t, "", m.LastSyncResourceVersion(), "not synced before Replace succeeds")
	a = m.Step(Replaced{})
	assert.Equal(t, Action{Kind: Watch, Reuse: true, PropagateRV: true}, a)
	assert.Equal(t, "30", m.LastSyncResourceVersion())
	assert.False(t, m.rvUnavailable)
}

// TestStopSkipsEverythingButReplace: state already received reaches the
// store even when a stop lands just before its Replace.
func TestStopSkipsEverythingButReplace(t *testing.T) {
	m := newTestMachine(true)
	a := m.Step(Begin{})
	assert.True(t, a.Abandoned(), "watch-list")
	a = m.Step(WatchListDone{Err: errInternal})
	assert.True(t, a.Abandoned(), "list")
	a = m.Step(ListDone{ResourceVersion: "5"})
	assert.False(t, a.Abandoned(), "replace after list")
	a = m.Step(Replaced{})
	assert.True(t, a.Abandoned(), "watch")
	m.Step(WatchEnded{Err: errExpired})
	m.Step(Begin{})
	a = m.Step(WatchListDone{Synced: true, ResourceVersion: "9"})
	assert.False(t, a.Abandoned(), "replace after watch-list")
	assert.True(t, m.Step(Replaced{}).Abandoned(), "watch on the stream")
	assert.True(t, Action{Kind: Return}.Abandoned())
}

func TestF9_WatchListReplaceFailureFallsBackToList(t *testing.T) {
	m := newTestMachine(true)
	m.Step(Begin{})
	m.Step(WatchListDone{Synced: true, ResourceVersion: "30"})
	boom := errors.New("boom")
	a := m.Step(Replaced{Err: boom})
	assert.Equal(t, List, a.Kind)
	assert.Equal(t, "0", a.Options.ResourceVersion)
	assert.Equal(t, boom, a.Note)
}

func TestF10_ListResourceVersionAndPageSize(t *testing.T) {
	m := newTestMachine(false)
	a := m.Step(Begin{})
	assert.Equal(t, Action{Kind: List, Options: metav1.ListOptions{ResourceVersion: "0"}, PageSize: 500}, a, "cold start lists at 0, paged")
	m.Step(ListDone{ResourceVersion: "10"})
	m.Step(Replaced{})
	m.Step(WatchEnded{Err: errExpired})

	a = m.Step(Begin{})
	assert.Equal(t, Action{Kind: List, Options: metav1.ListOptions{ResourceVersion: "10"}, PageSize: 0}, a, "relist at last RV is unpaged")

	a = m.Step(ListDone{Err: errExpired})
	assert.Equal(t, Action{Kind: List, Options: metav1.ListOptions{ResourceVersion: ""}, PageSize: 0}, a, "one retry at latest, same page size")
	a = m.Step(ListDone{Err: errExpired})
	assert.Equal(t, Return, a.Kind)
	assert.EqualError(t, a.Err, "failed to list *v1.Pod: too old")
	assert.True(t, errors.Is(a.Err, errExpired))

	a = m.Step(Begin{})
	assert.Equal(t, Action{Kind: List, Options: metav1.ListOptions{ResourceVersion: ""}, PageSize: 500}, a, "RV stays unavailable until a success")

	a = m.Step(Begin{PageSize: 7})
	assert.Equal(t, int64(7), a.PageSize, "WatchListPageSize wins")
}

func TestF10_PaginatedZeroListKeepsPaging(t *testing.T) {
	m := newTestMachine(false)
	m.Step(Begin{})
	m.Step(ListDone{ResourceVersion: "10", Paginated: true})
	m.Step(Replaced{})
	m.Step(WatchEnded{Err: errExpired})
	a := m.Step(Begin{})
	assert.Equal(t, "10", a.Options.ResourceVersion)
	assert.Equal(t, int64(500), a.PageSize)
}

func TestF10_PaginatedLaterListDoesNotForcePaging(t *testing.T) {
	m := newTestMachine(false)
	syncByList(t, m, "10")
	m.Step(WatchEnded{Err: errExpired})
	m.Step(Begin{})
	m.Step(ListDone{ResourceVersion: "11", Paginated: true})
	m.Step(Replaced{})
	m.Step(WatchEnded{Err: errExpired})
	assert.Equal(t, int64(0), m.Step(Begin{}).PageSize)
}

func TestF10_TooLargeRVRetriesAtLatest(t *testing.T) {
	m := newTestMachine(false)
	m.Step(Begin{})
	a := m.Step(ListDone{Err: errTooLarge})
	assert.Equal(t, "", a.Options.ResourceVersion)
	assert.Equal(t, int64(500), a.PageSize)
}

func TestF10_OtherListErrorsReturn(t *testing.T) {
	m := newTestMachine(false)
	m.Step(Begin{})
	a := m.Step(ListDone{Err: errTooMany})
	assert.Equal(t, Return, a.Kind)
	assert.EqualError(t, a.Err, "failed to list *v1.Pod: busy")
}

func TestF10_ReplaceErrorReturnsIt(t *testing.T) {
	m := newTestMachine(false)
	m.Step(Begin{})
	m.Step(ListDone{ResourceVersion: "10"})
	boom := errors.New("unable to sync list result: boom")
	assert.Equal(t, Action{Kind: Return, Err: boom}, m.Step(Replaced{Err: boom}))
	assert.Equal(t, "", m.LastSyncResourceVersion())
}

func TestF11_WatchOptionsAndRVPropagation(t *testing.T) {
	m := newTestMachine(false)
	a := syncByList(t, m, "10")
	assert.Equal(t, Watch, a.Kind)
	assert.Equal(t, "10", a.Options.ResourceVersion)
	assert.True(t, a.Options.AllowWatchBookmarks)
	assert.Nil(t, a.Options.SendInitialEvents)
	assert.True(t, a.PropagateRV)
	assert.True(t, m.ObserveEvent("11", false))
	assert.Equal(t, "11", m.LastSyncResourceVersion())

	m = newTestMachine(false)
	a = syncByList(t, m, "")
	assert.False(t, a.PropagateRV, "a watch from \"\" starts with synthetic Added events")
	assert.False(t, m.ObserveEvent("5", false))
	assert.Equal(t, "", m.LastSyncResourceVersion())
	assert.True(t, m.ObserveEvent("6", true))
	assert.Equal(t, "6", m.LastSyncResourceVersion())
}

func TestF11_WatchStartErrors(t *testing.T) {
	for _, err := range []error{errTooMany, errRefused} {
		m := newTestMachine(false)
		syncByList(t, m, "10")
		a := m.Step(WatchStartFailed{Err: err})
		assert.Equal(t, Watch, a.Kind)
		assert.True(t, a.Backoff)
		assert.Equal(t, "10", a.Options.ResourceVersion)
	}
	for _, err := range []error{errExpired, errInternal, errForbidden} {
		m := newTestMachine(false)
		syncByList(t, m, "10")
		assert.Equal(t, Action{Kind: Return, Err: err}, m.Step(WatchStartFailed{Err: err}))
	}
}

func TestF13_WatchEndDecisions(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name string
		err  error
		want Action
	}{
		{"clean close rewatches", nil, Action{Kind: Watch}},
		{"expired ends without error", errExpired, Action{Kind: Return}},
		{"gone ends without error", errGone, Action{Kind: Return}},
		{"429 backs off", errTooMany, Action{Kind: Watch, Backoff: true}},
		{"internal error without retry window ends", errInternal, Action{Kind: Return, Note: errInternal}},
		{"too large RV ends", errTooLarge, Action{Kind: Return, Note: errTooLarge}},
		{"other ends with a note", errForbidden, Action{Kind: Return, Note: errForbidden}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMachine(false)
			syncByList(t, m, "10")
			a := m.Step(WatchEnded{Err: tc.err, At: now})
			assert.Equal(t, tc.want.Kind, a.Kind)
			assert.Equal(t, tc.want.Backoff, a.Backoff)
			assert.Equal(t, tc.want.Note, a.Note)
			assert.NoError(t, a.Err)
		})
	}
}

func TestF13_InternalErrorRetryWindow(t *testing.T) {
	m := newTestMachine(false)
	m.Step(Begin{MaxInternalErrorRetry: 30 * time.Second})
	m.Step(ListDone{ResourceVersion: "10"})
	m.Step(Replaced{})
	t0 := time.Unix(1000, 0)
	assert.Equal(t, Watch, m.Step(WatchEnded{Err: errInternal, At: t0}).Kind)
	assert.Equal(t, Watch, m.Step(WatchEnded{Err: errInternal, At: t0.Add(20 * time.Second)}).Kind)
	assert.Equal(t, Return, m.Step(WatchEnded{Err: errInternal, At: t0.Add(40 * time.Second)}).Kind, "window of the first error passed")
}

func TestF13_VeryShortWatch(t *testing.T) {
	assert.True(t, IsVeryShortWatch(999*time.Millisecond, 0))
	assert.False(t, IsVeryShortWatch(time.Second, 0))
	assert.False(t, IsVeryShortWatch(0, 1))
}

func TestM8_Deadline(t *testing.T) {
	t0 := time.Unix(1000, 0)
	d := Deadline{MaxRetry: 10 * time.Second, MinReset: time.Minute}
	assert.False(t, d.Allow(t0), "no error recorded")
	d.Record(true, t0)
	assert.True(t, d.Allow(t0.Add(10*time.Second)))
	d.Record(false, t0.Add(11*time.Second))
	assert.False(t, d.Allow(t0.Add(11*time.Second)))
	d.Record(true, t0.Add(12*time.Second))
	assert.True(t, d.Allow(t0.Add(12*time.Second)), "window was reset by Allow")
	d.Record(true, t0.Add(20*time.Second))
	assert.False(t, d.Allow(t0.Add(23*time.Second)), "run started at 12s")
	d.Record(true, t0.Add(5*time.Minute))
	assert.True(t, d.Allow(t0.Add(5*time.Minute)), "a quiet minute starts a new run")

	never := Deadline{MaxRetry: 0, MinReset: time.Minute}
	never.Record(true, t0)
	assert.False(t, never.Allow(t0))
}

func TestStepRejectsUnknownInput(t *testing.T) {
	a := newTestMachine(false).Step(nil)
	assert.Equal(t, Return, a.Kind)
	assert.Error(t, a.Err)
}

// TestF9_EndBookmarkPatienceOnEveryWatchList: every watch-list request
// tells the caller how long a stream may stay quiet.
func TestF9_EndBookmarkPatienceOnEveryWatchList(t *testing.T) {
	m := newTestMachine(true)
	a := m.Step(Begin{})
	require.Equal(t, WatchList, a.Kind)
	assert.Equal(t, EndBookmarkPatience, a.Patience)
	a = m.Step(WatchListDone{Quiet: true})
	require.Equal(t, WatchList, a.Kind)
	assert.Equal(t, EndBookmarkPatience, a.Patience)
	assert.Nil(t, a.Report, "one miss is not reported")
}
