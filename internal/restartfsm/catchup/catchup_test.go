package catchup

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/restartfsm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

// A synced Run closes its watch; a watch from the synced version, the
// informer's next request, gets every later change.
func TestSyncedRunClosesItsWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &corev1.Pod{}})
		_, err := srv.Create(pod("a")) // 2
		require.NoError(t, err)
		_, err = srv.Create(pod("b")) // 3
		require.NoError(t, err)
		var applied []string
		res := Run(t.Context(), Config{
			ListerWatcher: srv,
			Load:          func() (string, error) { return "2", nil },
			Apply:         func(ev watch.Event) { applied = append(applied, string(ev.Type)+" "+ev.Object.(*corev1.Pod).Name) },
		})
		require.True(t, res.Synced)
		assert.Equal(t, "3", res.ResourceVersion)
		assert.Equal(t, []string{"ADDED b"}, applied)
		synctest.Wait()
		assert.Zero(t, srv.OpenWatches())
		assert.Equal(t, fake.RequestCounts{ProbeLists: 1, ResumedWatches: 1}, srv.RequestCounts())

		_, err = srv.Delete("ns", "a") // 4, while nothing watches
		require.NoError(t, err)
		w, err := srv.Watch(metav1.ListOptions{ResourceVersion: res.ResourceVersion})
		require.NoError(t, err)
		defer w.Stop()
		ev := <-w.ResultChan()
		assert.Equal(t, watch.Deleted, ev.Type)
		assert.Equal(t, "4", ev.Object.(*corev1.Pod).ResourceVersion)
	})
}

// A stopped Run returns the context's error, logs nothing and leaves no
// watch open.
func TestStoppedRunReturnsTheContextsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &corev1.Pod{}})
		_, err := srv.Create(pod("a")) // 2
		require.NoError(t, err)
		srv.AdvanceResourceVersion(5) // a quiet resource: only a bookmark would pass
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan Result)
		go func() {
			done <- Run(ctx, Config{ListerWatcher: srv, Load: func() (string, error) { return "2", nil },
				Apply: func(watch.Event) {}, Machine: restartfsm.Config{WatchTimeout: time.Minute}})
		}()
		synctest.Wait()
		assert.Equal(t, 1, srv.OpenWatches())
		cancel()
		res := <-done
		assert.False(t, res.Synced)
		assert.Zero(t, res.Reason)
		assert.ErrorIs(t, res.Err, context.Canceled)
		synctest.Wait()
		assert.Zero(t, srv.OpenWatches())
	})
}

// A probe CheckProbe refuses falls back as an unusable snapshot, before
// any watch; CheckProbe sees the list and the version loaded.
func TestRefusedProbeFallsBackUnusable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &corev1.Pod{}})
		_, err := srv.Create(pod("a")) // 2
		require.NoError(t, err)
		refused := errors.New("another cluster")
		var loaded string
		var items int
		res := Run(t.Context(), Config{
			ListerWatcher: srv,
			Load:          func() (string, error) { return "2", nil },
			Apply:         func(watch.Event) { t.Error("applied") },
			CheckProbe: func(list runtime.Object, rv string) error {
				loaded, items = rv, len(list.(*corev1.PodList).Items)
				return refused
			},
		})
		assert.False(t, res.Synced)
		assert.Equal(t, restartfsm.Unusable, res.Reason)
		assert.ErrorIs(t, res.Err, refused)
		assert.Equal(t, "2", loaded)
		assert.Equal(t, 1, items)
		assert.Equal(t, fake.RequestCounts{ProbeLists: 1}, srv.RequestCounts())
	})
}
