package fake

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
)

func seedFakeTestPods(t *testing.T, s *Server) {
	t.Helper()
	for _, p := range []*corev1.Pod{
		fakeTestPod("a", "p1", "app", "web"),
		fakeTestPod("a", "p2", "app", "db"),
		fakeTestPod("b", "p1", "app", "web"),
		fakeTestPod("b", "p3"),
	} {
		mustCreate(t, s, p)
	}
}

func TestListSelectorsAndNamespaces(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{Fields: map[string]func(runtime.Object) string{
		"spec.nodeName": func(o runtime.Object) string { return o.(*corev1.Pod).Spec.NodeName },
	}})
	seedFakeTestPods(t, s)

	cases := []struct {
		name string
		lw   interface {
			List(metav1.ListOptions) (runtime.Object, error)
		}
		opts metav1.ListOptions
		want []string
	}{
		{"all, ordered by key like etcd", s, metav1.ListOptions{}, []string{"a/p1", "a/p2", "b/p1", "b/p3"}},
		{"label", s, metav1.ListOptions{LabelSelector: "app=web"}, []string{"a/p1", "b/p1"}},
		{"label set-based", s, metav1.ListOptions{LabelSelector: "app in (db),app"}, []string{"a/p2"}},
		{"field name", s, metav1.ListOptions{FieldSelector: "metadata.name=p1"}, []string{"a/p1", "b/p1"}},
		{"field namespace", s, metav1.ListOptions{FieldSelector: "metadata.namespace!=a"}, []string{"b/p1", "b/p3"}},
		{"extra field", s, metav1.ListOptions{FieldSelector: "spec.nodeName="}, []string{"a/p1", "a/p2", "b/p1", "b/p3"}},
		{"namespace view", s.Namespace("b"), metav1.ListOptions{}, []string{"b/p1", "b/p3"}},
		{"namespace view and label", s.Namespace("b"), metav1.ListOptions{LabelSelector: "app=web"}, []string{"b/p1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := tc.lw.List(tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, listNames(t, obj))
			assert.Equal(t, "5", obj.(*corev1.PodList).ResourceVersion, "the list carries the RV it was served at")
		})
	}
}

func TestListRejectsBadOptions(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	seedFakeTestPods(t, s)
	cases := []struct {
		name  string
		opts  metav1.ListOptions
		check func(error) bool
	}{
		{"bad label selector", metav1.ListOptions{LabelSelector: "a in (("}, apierrors.IsBadRequest},
		// The API server only supports the fields registered for the resource.
		{"unsupported field", metav1.ListOptions{FieldSelector: "spec.nodeName=x"}, apierrors.IsBadRequest},
		{"bad RV", metav1.ListOptions{ResourceVersion: "abc"}, apierrors.IsBadRequest},
		// Rules from apimachinery's ValidateListOptions, which the fake calls.
		{"match without RV", metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact}, apierrors.IsInvalid},
		{"exact with RV 0", metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, apierrors.IsInvalid},
		{"sendInitialEvents on list", metav1.ListOptions{SendInitialEvents: ptrTo(true)}, apierrors.IsInvalid},
		{"bad continue", metav1.ListOptions{Continue: "!!"}, apierrors.IsBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.List(tc.opts)
			assert.True(t, tc.check(err), "got %v", err)
		})
	}
}

func TestListPagingIsAConsistentSnapshot(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	seedFakeTestPods(t, s)

	first, err := s.List(metav1.ListOptions{Limit: 2})
	require.NoError(t, err)
	fl := first.(*corev1.PodList)
	assert.Equal(t, []string{"a/p1", "a/p2"}, listNames(t, first))
	require.NotEmpty(t, fl.Continue)
	require.NotNil(t, fl.RemainingItemCount)
	assert.Equal(t, int64(2), *fl.RemainingItemCount)

	// Changes after the first page do not show in later pages: they come from the same snapshot.
	_, err = s.Delete("b", "p3")
	require.NoError(t, err)
	mustCreate(t, s, fakeTestPod("b", "p2"))

	second, err := s.List(metav1.ListOptions{Limit: 2, Continue: fl.Continue})
	require.NoError(t, err)
	assert.Equal(t, []string{"b/p1", "b/p3"}, listNames(t, second))
	assert.Empty(t, second.(*corev1.PodList).Continue)
	assert.Equal(t, "5", second.(*corev1.PodList).ResourceVersion)

	_, err = s.List(metav1.ListOptions{Limit: 2, Continue: fl.Continue, ResourceVersion: "5"})
	assert.True(t, apierrors.IsBadRequest(err), "RV with continue: %v", err)
}

func TestListPagingWithSelectorHasNoRemainingCount(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	seedFakeTestPods(t, s)
	page, err := s.List(metav1.ListOptions{Limit: 1, LabelSelector: "app=web"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a/p1"}, listNames(t, page))
	assert.NotEmpty(t, page.(*corev1.PodList).Continue)
	assert.Nil(t, page.(*corev1.PodList).RemainingItemCount)
}

// client-go's pager must see every object exactly once.
func TestListWorksWithClientGoPager(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	for i := range 25 {
		mustCreate(t, s, fakeTestPod("ns", string(rune('a'+i))))
	}
	p := pager.New(pager.SimplePageFunc(s.List))
	p.PageSize = 7
	n := 0
	require.NoError(t, p.EachListItem(context.Background(), metav1.ListOptions{}, func(runtime.Object) error {
		n++
		return nil
	}))
	assert.Equal(t, 25, n)
}

func TestContinueTokenExpiresWithTheWindow(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	seedFakeTestPods(t, s)
	first, err := s.List(metav1.ListOptions{Limit: 2})
	require.NoError(t, err)
	mustCreate(t, s, fakeTestPod("c", "late"))
	s.Compact()

	_, err = s.List(metav1.ListOptions{Limit: 2, Continue: first.(*corev1.PodList).Continue})
	require.True(t, apierrors.IsResourceExpired(err), "got %v", err)
	status := err.(apierrors.APIStatus).Status()
	assert.Equal(t, int32(410), status.Code)
	assert.Contains(t, status.Message, "The provided continue parameter is too old")
	// The 410 carries an inconsistent token that continues from the latest state.
	require.NotEmpty(t, status.ListMeta.Continue)
	rest, err := s.List(metav1.ListOptions{Limit: 10, Continue: status.ListMeta.Continue})
	require.NoError(t, err)
	assert.Equal(t, []string{"b/p1", "b/p3", "c/late"}, listNames(t, rest))
	assert.Equal(t, "6", rest.(*corev1.PodList).ResourceVersion)
}

func TestListResourceVersionSemantics(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{HistorySize: 3})
	mustCreate(t, s, fakeTestPod("ns", "a")) // 2
	mustCreate(t, s, fakeTestPod("ns", "b")) // 3
	_, err := s.Delete("ns", "a")            // 4
	require.NoError(t, err)
	mustCreate(t, s, fakeTestPod("ns", "c")) // 5; window now starts at 2
	mustCreate(t, s, fakeTestPod("ns", "d")) // 6; window now starts at 3

	cases := []struct {
		name    string
		opts    metav1.ListOptions
		want    []string
		wantRV  string
		wantErr func(error) bool
	}{
		{name: "unset is the latest", opts: metav1.ListOptions{}, want: []string{"ns/b", "ns/c", "ns/d"}, wantRV: "6"},
		// The watch cache ignores the limit for RV=0 (cacher computeListLimit).
		{name: "0 ignores limit", opts: metav1.ListOptions{ResourceVersion: "0", Limit: 1}, want: []string{"ns/b", "ns/c", "ns/d"}, wantRV: "6"},
		{name: "exact snapshot", opts: metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, want: []string{"ns/a", "ns/b"}, wantRV: "3"},
		{name: "legacy RV with limit is exact", opts: metav1.ListOptions{ResourceVersion: "4", Limit: 10}, want: []string{"ns/b"}, wantRV: "4"},
		{name: "not older than is served at the latest", opts: metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, want: []string{"ns/b", "ns/c", "ns/d"}, wantRV: "6"},
		{name: "legacy RV without limit is not-older-than", opts: metav1.ListOptions{ResourceVersion: "2"}, want: []string{"ns/b", "ns/c", "ns/d"}, wantRV: "6"},
		{name: "exact below the window is 410", opts: metav1.ListOptions{ResourceVersion: "2", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantErr: apierrors.IsResourceExpired},
		{name: "exact above current is too large", opts: metav1.ListOptions{ResourceVersion: "7", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantErr: isTooLargeRV},
		{name: "not older than a future RV is too large", opts: metav1.ListOptions{ResourceVersion: "9", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, wantErr: isTooLargeRV},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := s.List(tc.opts)
			if tc.wantErr != nil {
				assert.True(t, tc.wantErr(err), "got %v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, listNames(t, obj))
			assert.Equal(t, tc.wantRV, obj.(*corev1.PodList).ResourceVersion)
		})
	}
}

// isTooLargeRV matches the API server's error the way client-go's reflector recognises it.
func isTooLargeRV(err error) bool {
	return apierrors.IsTimeout(err) && apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

func TestListItemsAreCopies(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a"))
	obj, err := s.List(metav1.ListOptions{})
	require.NoError(t, err)
	obj.(*corev1.PodList).Items[0].Labels = map[string]string{"x": "y"}
	got, err := s.Get("ns", "a")
	require.NoError(t, err)
	assert.Empty(t, got.(*corev1.Pod).Labels)
}

func TestListHonoursCancelledContext(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.ListWithContext(ctx, metav1.ListOptions{})
	assert.ErrorIs(t, err, context.Canceled)
}
