package reflectorfsm

import "time"

// Deadline decides whether a run of retryable errors is still short enough
// to keep retrying. It is the clock-free core of RetryWithDeadline: callers
// pass the current time in.
type Deadline struct {
	// MaxRetry is how long after the first error of a run retries are
	// allowed; zero or less never allows them.
	MaxRetry time.Duration
	// MinReset is the quiet period after which a new error starts a new run.
	MinReset time.Duration

	first, last time.Time
}

// Record notes an error at now. Only errors the caller deems retryable are
// recorded.
func (d *Deadline) Record(retryable bool, now time.Time) {
	if !retryable {
		return
	}
	if now.Sub(d.last) >= d.MinReset {
		d.first, d.last = time.Time{}, time.Time{}
	}
	if d.first.IsZero() {
		d.first = now
	}
	d.last = now
}

// Allow reports whether a retry is still within the window at now. Once the
// window has passed, the run is forgotten.
func (d *Deadline) Allow(now time.Time) bool {
	if d.MaxRetry <= 0 {
		return false
	}
	if now.Sub(d.first) <= d.MaxRetry {
		return true
	}
	d.first, d.last = time.Time{}, time.Time{}
	return false
}
