package cache

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/openinformer/cache/internal/reflectorfsm"
)

// NewRetryWithDeadline returns a RetryWithDeadline that allows retrying
// errors for which isRetryable is true for up to maxRetryDuration after the
// first of them; a gap of minResetPeriod between such errors starts over.
// A maxRetryDuration of zero or less never allows a retry; a nil
// isRetryable deems no error retryable.
func NewRetryWithDeadline(maxRetryDuration, minResetPeriod time.Duration, isRetryable func(error) bool, clock clock.Clock) RetryWithDeadline {
	return &retryWithDeadline{
		deadline:    reflectorfsm.Deadline{MaxRetry: maxRetryDuration, MinReset: minResetPeriod},
		isRetryable: isRetryable,
		clock:       clock,
	}
}

type retryWithDeadline struct {
	deadline    reflectorfsm.Deadline
	isRetryable func(error) bool
	clock       clock.PassiveClock
}

// After records err if it is retryable.
func (r *retryWithDeadline) After(err error) {
	r.deadline.Record(r.isRetryable != nil && r.isRetryable(err), r.clock.Now())
}

// ShouldRetry reports whether the current run of errors is still within
// the deadline.
func (r *retryWithDeadline) ShouldRetry() bool {
	return r.deadline.Allow(r.clock.Now())
}
