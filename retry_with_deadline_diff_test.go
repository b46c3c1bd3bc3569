package cache

import (
	"errors"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clientcache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestRetryWithDeadlineMatchesClientGo feeds both implementations the same
// random sequences of errors, successes and clock steps, for several
// retry durations and reset periods, and compares every ShouldRetry.
func TestRetryWithDeadlineMatchesClientGo(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("etcdserver: no leader"))
	other := errors.New("some other error")
	errs := []error{nil, internal, internal, other}
	rng := rand.New(rand.NewSource(7))
	for _, maxRetry := range []time.Duration{0, time.Second, 5 * time.Second} {
		for _, reset := range []time.Duration{0, 2 * time.Second, 30 * time.Second} {
			start := time.Unix(1000, 0)
			ourClock, theirClock := clocktesting.NewFakeClock(start), clocktesting.NewFakeClock(start)
			ours := NewRetryWithDeadline(maxRetry, reset, apierrors.IsInternalError, ourClock)
			theirs := clientcache.NewRetryWithDeadline(maxRetry, reset, apierrors.IsInternalError, theirClock)
			for step := 0; step < 200; step++ {
				d := time.Duration(rng.Intn(3000)) * time.Millisecond
				ourClock.Step(d)
				theirClock.Step(d)
				err := errs[rng.Intn(len(errs))]
				ours.After(err)
				theirs.After(err)
				if !assert.Equal(t, theirs.ShouldRetry(), ours.ShouldRetry(), "max %v reset %v step %d", maxRetry, reset, step) {
					break
				}
			}
		}
	}
}
