package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restfake "k8s.io/client-go/rest/fake"
	clientcache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

type listWatchTestCtxKey struct{}

func TestM2_ListWatchPrefersItsOwnFlavour(t *testing.T) {
	var got []string
	ctx := context.WithValue(context.Background(), listWatchTestCtxKey{}, "mine")
	full := &ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) { got = append(got, "ListFunc"); return nil, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			got = append(got, "WatchFunc")
			return nil, nil
		},
		ListWithContextFunc: func(c context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			got = append(got, "ListWithContextFunc:"+ctxValue(c))
			return nil, nil
		},
		WatchFuncWithContext: func(c context.Context, _ metav1.ListOptions) (watch.Interface, error) {
			got = append(got, "WatchFuncWithContext:"+ctxValue(c))
			return nil, nil
		},
	}
	_, _ = full.List(metav1.ListOptions{})
	_, _ = full.Watch(metav1.ListOptions{})
	_, _ = full.ListWithContext(ctx, metav1.ListOptions{})
	_, _ = full.WatchWithContext(ctx, metav1.ListOptions{})
	assert.Equal(t, []string{"ListFunc", "WatchFunc", "ListWithContextFunc:mine", "WatchFuncWithContext:mine"}, got)

	got = nil
	plain := &ListWatch{ListFunc: full.ListFunc, WatchFunc: full.WatchFunc}
	_, _ = plain.ListWithContext(ctx, metav1.ListOptions{})
	_, _ = plain.WatchWithContext(ctx, metav1.ListOptions{})
	withCtx := &ListWatch{ListWithContextFunc: full.ListWithContextFunc, WatchFuncWithContext: full.WatchFuncWithContext}
	_, _ = withCtx.List(metav1.ListOptions{})
	_, _ = withCtx.Watch(metav1.ListOptions{})
	assert.Equal(t, []string{"ListFunc", "WatchFunc", "ListWithContextFunc:", "WatchFuncWithContext:"}, got)
}

func ctxValue(ctx context.Context) string {
	s, _ := ctx.Value(listWatchTestCtxKey{}).(string)
	return s
}

// listWatchTestClient is a REST client that records request URLs and
// answers LISTs with an empty pod list and watches with an error.
func listWatchTestClient(t *testing.T) (*restfake.RESTClient, func() []*url.URL) {
	var mu sync.Mutex
	var urls []*url.URL
	c := &restfake.RESTClient{
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		GroupVersion:         v1.SchemeGroupVersion,
		Client: restfake.CreateHTTPClient(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			urls = append(urls, req.URL)
			mu.Unlock()
			body, err := json.Marshal(&v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "7"}})
			require.NoError(t, err)
			status := http.StatusOK
			if req.URL.Query().Get("watch") == "true" {
				status = http.StatusForbidden
				body, _ = json.Marshal(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: 403})
			}
			return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(bytes.NewReader(body))}, nil
		}),
	}
	return c, func() []*url.URL {
		mu.Lock()
		defer mu.Unlock()
		return append([]*url.URL(nil), urls...)
	}
}

func TestM2_ListWatchFromClient(t *testing.T) {
	c, urls := listWatchTestClient(t)
	lw := NewListWatchFromClient(c, "pods", "ns1", fields.OneTermEqualSelector("spec.nodeName", "n1"))
	require.NotNil(t, lw.ListFunc)
	require.NotNil(t, lw.WatchFunc)
	require.NotNil(t, lw.ListWithContextFunc)
	require.NotNil(t, lw.WatchFuncWithContext)

	obj, err := lw.List(metav1.ListOptions{ResourceVersion: "0", Limit: 5})
	require.NoError(t, err)
	assert.Equal(t, "7", obj.(*v1.PodList).ResourceVersion)
	_, err = lw.ListWithContext(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	_, err = lw.Watch(metav1.ListOptions{ResourceVersion: "3"})
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	_, err = lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "%v", err)

	got := urls()
	require.Len(t, got, 4)
	for i, u := range got {
		assert.Equal(t, "/namespaces/ns1/pods", u.Path)
		assert.Equal(t, "spec.nodeName=n1", u.Query().Get("fieldSelector"))
		assert.Equal(t, i >= 2, u.Query().Get("watch") == "true")
	}
	assert.Equal(t, "5", got[0].Query().Get("limit"))
	assert.Equal(t, "3", got[2].Query().Get("resourceVersion"))
}

func TestM2_FilteredListWatchAppliesModifierToACopy(t *testing.T) {
	c, urls := listWatchTestClient(t)
	var seen []bool
	lw := NewFilteredListWatchFromClient(c, "pods", "", func(o *metav1.ListOptions) {
		seen = append(seen, o.Watch)
		o.LabelSelector = "app=web"
	})
	opts := metav1.ListOptions{}
	_, _ = lw.List(opts)
	_, _ = lw.Watch(opts)
	assert.Equal(t, metav1.ListOptions{}, opts, "caller's options untouched")
	assert.Equal(t, []bool{false, true}, seen, "watch sets Watch before the modifier runs")
	for _, u := range urls() {
		assert.Equal(t, "/pods", u.Path)
		assert.Equal(t, "app=web", u.Query().Get("labelSelector"))
	}
}

type listWatchPlainLW struct{ calls []string }

func (l *listWatchPlainLW) List(metav1.ListOptions) (runtime.Object, error) {
	l.calls = append(l.calls, "list")
	return nil, nil
}

func (l *listWatchPlainLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	l.calls = append(l.calls, "watch")
	return nil, nil
}

func TestM2_ContextAdapters(t *testing.T) {
	lw := &ListWatch{}
	assert.Same(t, lw, ToListerWatcherWithContext(lw))
	assert.Same(t, lw, ToListerWithContext(lw))
	assert.Same(t, lw, ToWatcherWithContext(lw))

	plain := &listWatchPlainLW{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lwc := ToListerWatcherWithContext(plain)
	_, _ = lwc.ListWithContext(ctx, metav1.ListOptions{})
	_, _ = lwc.WatchWithContext(ctx, metav1.ListOptions{})
	_, _ = ToListerWithContext(plain).ListWithContext(ctx, metav1.ListOptions{})
	_, _ = ToWatcherWithContext(plain).WatchWithContext(ctx, metav1.ListOptions{})
	assert.Equal(t, []string{"list", "watch", "list", "watch"}, plain.calls, "a cancelled context is ignored by the adapters")
}

type listWatchSemanticsClient struct{ unsupported bool }

func (c listWatchSemanticsClient) IsWatchListSemanticsUnSupported() bool { return c.unsupported }

func TestM2_WatchListSemanticsMarker(t *testing.T) {
	lw := &ListWatch{}
	for _, tc := range []struct {
		client any
		want   bool
	}{{nil, false}, {struct{}{}, false}, {listWatchSemanticsClient{false}, false}, {listWatchSemanticsClient{true}, true}} {
		wrapped := ToListWatcherWithWatchListSemantics(lw, tc.client)
		marker, ok := wrapped.(interface{ IsWatchListSemanticsUnSupported() bool })
		require.True(t, ok)
		assert.Equal(t, tc.want, marker.IsWatchListSemanticsUnSupported())
		_, isCtx := wrapped.(ListerWatcherWithContext)
		assert.True(t, isCtx, "the wrapper keeps the context methods")
		assert.Equal(t, !tc.want, NewReflector(wrapped, nil, newReflectorTestStore(), 0).useWatchList)
	}
}

func TestM8_RetryWithDeadline(t *testing.T) {
	ours := retryWithDeadlineScript(func(c *clocktesting.FakeClock) RetryWithDeadline {
		return NewRetryWithDeadline(time.Minute, 30*time.Second, apierrors.IsInternalError, c)
	})
	theirs := retryWithDeadlineScript(func(c *clocktesting.FakeClock) RetryWithDeadline {
		return clientcache.NewRetryWithDeadline(time.Minute, 30*time.Second, apierrors.IsInternalError, c)
	})
	assert.Equal(t, []bool{false, true, false, true, true, true}, ours)
	assert.Equal(t, theirs, ours)

	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	internal := apierrors.NewInternalError(io.EOF)
	never := NewRetryWithDeadline(0, time.Minute, apierrors.IsInternalError, clk)
	never.After(internal)
	assert.False(t, never.ShouldRetry())

	nilRetryable := NewRetryWithDeadline(time.Minute, 30*time.Second, nil, clk)
	nilRetryable.After(internal)
	assert.False(t, nilRetryable.ShouldRetry(), "nil isRetryable retries nothing")
}

func retryWithDeadlineScript(build func(*clocktesting.FakeClock) RetryWithDeadline) []bool {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	r := build(clk)
	internal := apierrors.NewInternalError(io.EOF)
	var out []bool
	out = append(out, r.ShouldRetry())
	r.After(internal)
	out = append(out, r.ShouldRetry())
	clk.Step(20 * time.Second)
	r.After(io.EOF)
	r.After(internal)
	clk.Step(41 * time.Second)
	out = append(out, r.ShouldRetry())
	r.After(internal)
	out = append(out, r.ShouldRetry())
	clk.Step(45 * time.Second)
	r.After(internal)
	out = append(out, r.ShouldRetry())
	clk.Step(50 * time.Second)
	out = append(out, r.ShouldRetry())
	return out
}

func TestM2_EmptyListWatchErrsInsteadOfPanicking(t *testing.T) {
	lw := &ListWatch{}
	_, err := lw.List(metav1.ListOptions{})
	assert.EqualError(t, err, "ListWatch has neither ListFunc nor ListWithContextFunc")
	_, err = lw.ListWithContext(context.Background(), metav1.ListOptions{})
	assert.Error(t, err)
	_, err = lw.Watch(metav1.ListOptions{})
	assert.EqualError(t, err, "ListWatch has neither WatchFunc nor WatchFuncWithContext")
	_, err = lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	assert.Error(t, err)
}
