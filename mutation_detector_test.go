package cache

import (
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestI19_MutationDetectorOffUnlessEnvAtStart(t *testing.T) {
	want, _ := strconv.ParseBool(os.Getenv("KUBE_CACHE_MUTATION_DETECTOR"))
	d := NewCacheMutationDetector("*v1.Pod")
	_, isNoop := d.(noopMutationDetector)
	assert.Equal(t, !want, isNoop)
	if isNoop {
		stop := make(chan struct{})
		close(stop)
		d.AddObject(newTestPod("ns", "a", "1"))
		d.Run(stop)
	}
}

func TestI19_MutationDetectorReportsModifiedObjects(t *testing.T) {
	d := newCacheMutationChecker("*v1.Pod", time.Second, 2*time.Minute)
	var failures []string
	d.fail = func(msg string) { failures = append(failures, msg) }
	start := time.Unix(1000, 0)

	pod := newTestPod("ns", "a", "1")
	d.AddObject(pod)
	d.AddObject(DeletedFinalStateUnknown{Key: "ns/b", Obj: newTestPod("ns", "b", "1")})
	d.AddObject("not a runtime.Object")
	d.check(start)
	assert.Empty(t, failures, "unmodified objects pass")

	pod.Labels = map[string]string{"mutated": "yes"}
	d.check(start.Add(time.Second))
	assert.Equal(t, []string{"cache *v1.Pod modified"}, failures)

	// Kept through one rotation, forgotten at the second.
	d.check(start.Add(2*time.Minute + 2*time.Second))
	assert.Len(t, failures, 2, "still watched after the first rotation")
	d.check(start.Add(4*time.Minute + 3*time.Second))
	assert.Len(t, failures, 2, "forgotten after the second rotation")
}

func TestI19_MutationDetectorRunStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newCacheMutationChecker("*v1.Pod", time.Second, time.Minute)
		d.AddObject(newTestPod("ns", "a", "1"))
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { d.Run(stop); close(done) }()
		time.Sleep(3 * time.Minute)
		close(stop)
		<-done
	})
	goleak.VerifyNone(t)
}

func TestI19_MutationDetectorDefaultFailureIsPanic(t *testing.T) {
	d := newCacheMutationChecker("*v1.Pod", time.Second, time.Minute)
	pod := newTestPod("ns", "a", "1")
	d.AddObject(pod)
	pod.ResourceVersion = "2"
	assert.PanicsWithValue(t, "cache *v1.Pod modified", d.compare)
}
