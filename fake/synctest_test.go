package fake

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	oicache "github.com/openinformer/cache"
)

// Stacked faults inside a testing/synctest bubble: a dropped watch whose two reconnects are
// throttled (429), a compaction that makes the resume fail with 410 and forces a relist, and a
// watch dropped mid-stream. On the real clock the backoffs cost seconds; here they pass on the
// bubble's clock. Both informers must converge, every handler history must be in order, and
// openinformer must send the server exactly the requests client-go sends.
func TestInformersConvergeThroughStackedFaultsInSynctest(t *testing.T) {
	informers := []struct {
		name string
		new  fakeTestInformerConstructor
	}{{"client-go", clientcache.NewSharedIndexInformer}, {"openinformer", oicache.NewSharedIndexInformer}}
	for _, unsupported := range []bool{false, true} {
		requests := map[string][]string{}
		for _, inf := range informers {
			t.Run(fmt.Sprintf("%s/watchListUnsupported=%v", inf.name, unsupported), func(t *testing.T) {
				realStart := time.Now()
				synctest.Test(t, func(t *testing.T) {
					requests[inf.name] = runStackedFaults(t, inf.new, unsupported)
				})
				t.Logf("real time %v", time.Since(realStart))
			})
		}
		assert.Equal(t, stackedFaultsRequests[unsupported], requests["client-go"], "watchListUnsupported=%v", unsupported)
		assert.Equal(t, requests["client-go"], requests["openinformer"], "watchListUnsupported=%v", unsupported)
	}
}

// stackedFaultsRequests is what client-go's informer asks the server in runStackedFaults, by
// watchListUnsupported: the sync (in LIST mode a list and its first watch), three resumes after
// the drop (two throttled), the resume after the compaction (410), the relist (in LIST mode
// followed by its watch), and the resume after the mid-stream drop.
var stackedFaultsRequests = map[bool][]string{
	false: {`watch-list rv=""`, `watch rv="4"`, `watch rv="4"`, `watch rv="4"`, `watch rv="5"`,
		`watch-list rv="5"`, `watch rv="7"`},
	true: {`list rv="0"`, `watch rv="4"`, `watch rv="4"`, `watch rv="4"`, `watch rv="4"`, `watch rv="5"`,
		`list rv="5"`, `watch rv="6"`, `watch rv="7"`},
}

// runStackedFaults runs the scenario in the caller's bubble and returns the requests the server
// received, in order.
func runStackedFaults(t *testing.T, newInformer fakeTestInformerConstructor, watchListUnsupported bool) []string {
	s, err := New(Options{Object: &corev1.Pod{}, WatchListUnsupported: watchListUnsupported,
		Objects: []runtime.Object{fakeTestPod("ns", "a"), fakeTestPod("ns", "b"), fakeTestPod("ns", "c")}})
	require.NoError(t, err)
	rec := newInformerTestRecorder()
	inf, stop := runFakeTestInformerWith(t, newInformer, s, rec.handler())
	defer stop()
	settle := func() {
		time.Sleep(time.Minute) // longer than any backoff these faults cause
		synctest.Wait()
	}
	// A watch that ends within a second having delivered nothing counts as broken (both
	// reflectors relist), so the informer first watches for a while, as it would in production.
	settle()

	s.FailNextWatches(2, TooManyRequests(1))
	s.CloseWatches()
	_, err = s.Update(fakeTestPod("ns", "a", "v", "1"))
	require.NoError(t, err)
	settle()

	release := s.HoldEvents()
	_, err = s.Delete("ns", "b")
	require.NoError(t, err)
	s.Compact()
	s.CloseWatches()
	release()
	settle()

	s.CloseWatchesAfter(1)
	_, err = s.Update(fakeTestPod("ns", "c", "v", "1"))
	require.NoError(t, err)
	mustCreate(t, s, fakeTestPod("ns", "d"))
	settle()

	assert.True(t, storeMatchesServer(inf.GetStore(), s))
	rec.checkFinal(t, s)
	var out []string
	for _, r := range s.Requests() {
		out = append(out, fmt.Sprintf("%s rv=%q", verbs([]Request{r})[0], r.Options.ResourceVersion))
	}
	return out
}

// Unprepared, the first HandleError in a bubble sleeps for the years between the real clock at
// program start and the bubble's (see PrepareForSynctest); prepared, it returns at once.
func TestPrepareForSynctestMakesHandleErrorReturnAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		restore := PrepareForSynctest()
		defer restore()
		start := time.Now()
		utilruntime.HandleError(InternalError("etcd leader changed"))
		assert.Zero(t, time.Since(start))
	})
}

// A LIST-mode informer whose lists fail with errors reported through HandleError still syncs in
// a bubble.
func TestInformerSyncsThroughReportedListErrorsInSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Options{Object: &corev1.Pod{}, WatchListUnsupported: true,
			Objects: []runtime.Object{fakeTestPod("ns", "a")}})
		require.NoError(t, err)
		s.FailNextLists(2, InternalError("etcd leader changed"))
		inf, stop := runFakeTestInformerWith(t, oicache.NewSharedIndexInformer, s, newInformerTestRecorder().handler())
		defer stop()
		assert.True(t, storeMatchesServer(inf.GetStore(), s))
		assert.Equal(t, []string{"list", "list", "list", "watch"}, verbs(s.Requests()))
	})
}
