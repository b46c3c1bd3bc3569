package cache

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/fake"
)

// Issue 39 item 6: an empty Path or a directory that does not exist is
// reported once when the informer is made, which then runs without
// snapshots: no save is tried, nothing is written.
func TestSnapshotOptionsCheckedAtConstruction(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	for name, path := range map[string]string{
		"empty":   "",
		"missing": filepath.Join(dir, "absent", "pods.snap"),
	} {
		t.Run(name, func(t *testing.T) {
			logs := &allLogs{}
			logs.capture(t)
			synctest.Test(t, func(t *testing.T) {
				srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
				must(t)(srv.Create(labeledPod("a", "1")))
				opts := snapshotOptions(path, false)
				inf := NewSharedIndexInformerWithOptions(srv, &v1.Pod{}, opts)
				require.Len(t, logs.matching("Warning: snapshots turned off"), 1, "at construction")
				ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logs.logger()))
				done := make(chan struct{})
				go func() { defer close(done); inf.RunWithContext(ctx) }()
				require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced))
				cancel()
				<-done
			})
			assert.Len(t, logs.matching("Warning: snapshots turned off"), 1, "once")
			assert.Empty(t, logs.matching("Snapshot not saved"))
			assert.NoDirExists(t, filepath.Join(dir, "absent"))
		})
	}
}

// Issue 39 item 6: an Interval under MinSnapshotInterval is raised to it:
// a write every 10 ms for 3 s with an Interval of 10 ms saves about every
// second, not 300 times.
func TestSnapshotIntervalHasAFloor(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		opts := snapshotOptions(filepath.Join(t.TempDir(), "pods.snap"), true)
		opts.Snapshot.Interval = 10 * time.Millisecond
		run := startWithSnapshot(t, srv, opts)
		for i := range 300 {
			must(t)(srv.Create(labeledPod(string(rune('a'+i%26))+string(rune('a'+i/26)), "1")))
			time.Sleep(10 * time.Millisecond)
		}
		run.stop()
		assert.LessOrEqual(t, run.metrics.saved, 4)
		assert.GreaterOrEqual(t, run.metrics.saved, 2)
	})
}

// silentWatchLW is a server whose watches never send anything.
type silentWatchLW struct{ *fake.Server }

func (s silentWatchLW) WatchWithContext(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

func (s silentWatchLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), o)
}

// Issue 39 item 6: a restart with no catch-up timeout (negative) whose
// watch never reaches the target says, once a minute, that it waits.
func TestNegativeCatchUpTimeoutLogsWhileWaiting(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		_, opts := savedWithThreePods(t, srv, false)
		srv.AdvanceResourceVersion(5)
		opts.Snapshot.CatchUpTimeout = -1
		log := &restartLog{}
		inf := NewSharedIndexInformerWithOptions(silentWatchLW{srv}, &v1.Pod{}, opts)
		ctx, cancel := context.WithCancel(log.context(t.Context()))
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		time.Sleep(3*SnapshotCatchUpWaitLogInterval + time.Second)
		waiting := log.matching("Warm restart still waiting to catch up")
		assert.Len(t, waiting, 3)
		assert.False(t, inf.HasSynced())
		cancel()
		<-done
	})
}

// Issue 40 item 3, as a user of client-go's fake clientset meets it: its
// lists carry a resourceVersion, so a save right after the sync works, but
// its objects carry none, so once a write through it reaches the watch the
// cache has no version to resume from. Every save from then on fails; the
// informer says why once and counts each one, and leaves no file.
func TestSnapshotWithoutAResourceVersionSaysWhy(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		cs := k8sfake.NewClientset(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
		lw := &ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return cs.CoreV1().Pods("").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return cs.CoreV1().Pods("").Watch(ctx, o)
			},
		}
		path := filepath.Join(t.TempDir(), "pods.snap")
		opts := snapshotOptions(path, false)
		opts.Snapshot.Interval = time.Second
		// As a factory's informer: the clientset says it cannot stream a
		// watch-list, so the informer lists.
		run := startWithSnapshotOn(t, ToListWatcherWithWatchListSemantics(lw, cs), opts)
		require.NotEmpty(t, run.informer.LastSyncResourceVersion(), "the list carries one")
		_, err := cs.CoreV1().Pods("ns").Create(t.Context(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		synctest.Wait()
		require.Len(t, run.informer.GetStore().List(), 2)
		require.Empty(t, run.informer.LastSyncResourceVersion(), "the event carries none")
		time.Sleep(3500 * time.Millisecond)
		run.stop()
		notSaved := run.log.matching("Snapshot not saved")
		require.Len(t, notSaved, 1, "said once")
		assert.Contains(t, notSaved[0], "no resourceVersion")
		assert.Contains(t, notSaved[0], "fake.Server")
		assert.Equal(t, 4, run.metrics.failed, "three intervals and the stop")
		assert.Zero(t, run.metrics.saved)
		assert.NoFileExists(t, path)
	})
}

// A save that keeps failing for one cause is logged once and counted each
// time; the previous snapshot stays.
func TestSnapshotFailureLoggedOnceCountedEachTime(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		dir := t.TempDir()
		opts := snapshotOptions(filepath.Join(dir, "pods.snap"), true)
		opts.Snapshot.Interval = time.Second
		require.NoError(t, os.Mkdir(opts.Snapshot.Path, 0o700)) // nothing can be committed there
		run := startWithSnapshot(t, srv, opts)
		time.Sleep(500 * time.Millisecond) // the saves come between the writes
		for i := range 3 {
			must(t)(srv.Create(labeledPod(string(rune('a'+i)), "1")))
			time.Sleep(time.Second)
		}
		run.stop()
		require.Len(t, run.log.matching("Snapshot not saved"), 1)
		assert.Equal(t, 4, run.metrics.failed)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Len(t, entries, 2, "the directory and the lock; no temporary file left")
	})
}

// Issue 39 item 6: a negative MaxPendingNotificationsPerHandler is no
// bound, as 0 is: a handler held while one pod changes 100 times gets all
// 100 updates, where a bound of 8 collapses them to the last.
func TestNegativeBacklogBoundIsUnbounded(t *testing.T) {
	defer goleak.VerifyNone(t)
	for bound, want := range map[int]int{-1: 100, 0: 100, 8: 1} {
		synctest.Test(t, func(t *testing.T) {
			srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
			must(t)(srv.Create(labeledPod("a", "0")))
			inf := NewSharedIndexInformerWithOptions(srv, &v1.Pod{}, SharedIndexInformerOptions{MaxPendingNotificationsPerHandler: bound})
			gate := make(chan struct{})
			var updates int
			reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs{
				AddFunc:    func(any) { <-gate },
				UpdateFunc: func(_, _ any) { updates++ },
			})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); inf.RunWithContext(ctx) }()
			synctest.Wait() // the handler holds its initial add
			for i := range 100 {
				must(t)(srv.Update(labeledPod("a", string(rune('1'+i)))))
			}
			synctest.Wait()
			close(gate)
			require.True(t, WaitForCacheSync(ctx.Done(), reg.HasSynced))
			synctest.Wait()
			assert.Equal(t, want, updates, "bound %d", bound)
			cancel()
			<-done
		})
	}
}
