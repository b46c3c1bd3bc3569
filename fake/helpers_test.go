package fake

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) {
	PrepareForSynctest()
	goleak.VerifyTestMain(m)
}

// fakeTestPod builds a pod; labels come in key, value pairs.
func fakeTestPod(ns, name string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if len(labels) > 0 {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			p.Labels[labels[i]] = labels[i+1]
		}
	}
	return p
}

// newFakeTestServer serves pods on a fake clock.
func newFakeTestServer(t *testing.T, opts Options) (*Server, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if opts.Object == nil && opts.GroupVersionKind.Empty() {
		opts.Object = &corev1.Pod{}
	}
	opts.Clock = clk
	s, err := New(opts)
	require.NoError(t, err)
	return s, clk
}

func mustCreate(t *testing.T, s *Server, obj runtime.Object) runtime.Object {
	t.Helper()
	out, err := s.Create(obj)
	require.NoError(t, err)
	return out
}

func startWatch(t *testing.T, lw interface {
	Watch(metav1.ListOptions) (watch.Interface, error)
}, o metav1.ListOptions) watch.Interface {
	t.Helper()
	w, err := lw.Watch(o)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return w
}

// nextEvent waits for one event; the real-time bound only guards against hangs.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "watch closed, wanted an event")
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a watch event")
		return watch.Event{}
	}
}

// requireClosed waits for the result channel to close, failing on any event.
func requireClosed(t *testing.T, w watch.Interface) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.False(t, ok, "wanted a closed watch, got %v", ev)
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the watch to close")
	}
}

// eventSummary is "TYPE name@rv" for compact assertions.
func eventSummary(ev watch.Event) string {
	if ev.Type == watch.Error {
		return "ERROR " + ev.Object.(*metav1.Status).Message
	}
	m := metaOf(ev.Object)
	return string(ev.Type) + " " + m.GetName() + "@" + m.GetResourceVersion()
}

func nextSummaries(t *testing.T, w watch.Interface, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	for range n {
		out = append(out, eventSummary(nextEvent(t, w)))
	}
	return out
}

func listNames(t *testing.T, obj runtime.Object) []string {
	t.Helper()
	list := obj.(*corev1.PodList)
	names := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return names
}

func ptrTo[T any](v T) *T { return &v }
