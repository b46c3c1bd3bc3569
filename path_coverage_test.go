package cache

import (
	"context"
	"os"
	"runtime/coverage"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/openinformer/cache/fake"
)

// TestPathCoverageOneUpdate is the measurement behind internal/cmd/pathfiles:
// with coverage counters cleared once the informer is synced and idle, it
// runs one watch MODIFIED through to its handler's OnUpdate and writes the
// counters to $OPENINFORMER_PATH_COVERDIR, so that the code that ran is
// that path's alone. Skipped unless that variable is set (it needs
// -covermode=atomic).
func TestPathCoverageOneUpdate(t *testing.T) {
	dir := os.Getenv("OPENINFORMER_PATH_COVERDIR")
	if dir == "" {
		t.Skip("set OPENINFORMER_PATH_COVERDIR and run with -covermode=atomic (internal/cmd/pathfiles)")
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, Objects: []k8sruntime.Object{pod}})
	inf := NewSharedIndexInformer(newStreamingLW(srv), &v1.Pod{}, 0, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	updated := make(chan struct{})
	reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { close(updated) }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	require.True(t, WaitForCacheSync(ctx.Done(), reg.HasSynced))
	next := pod.DeepCopy()
	next.Labels = map[string]string{"step": "2"}
	require.NoError(t, coverage.ClearCounters())
	_, err = srv.Update(next)
	require.NoError(t, err)
	<-updated
	require.NoError(t, coverage.WriteCountersDir(dir))
}
