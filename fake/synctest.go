package fake

import (
	"context"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// PrepareForSynctest makes k8s.io/apimachinery's HandleError safe inside testing/synctest
// bubbles and returns a function that undoes it. Call it once, from TestMain or before the
// first bubble starts, in a test binary that runs informers in bubbles.
//
// HandleError, which reflectors call for every failed list or watch that is not an
// expiration, sleeps to keep at least a millisecond between two error reports. It measures that
// from a time it read on the real clock at program start, and a bubble's clock starts in 2000:
// the first report made in a bubble sleeps for decades of bubble time, so that reflector never
// retries. Its last-report time is also shared by every bubble, which makes sleeps depend on
// what other tests did. PrepareForSynctest replaces HandleError's handlers with one that only
// logs, as the default one does; the reflectors' own backoff still spaces their retries.
func PrepareForSynctest() (restore func()) {
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{logUnhandledError}
	return func() { utilruntime.ErrorHandlers = saved }
}

// logUnhandledError logs like apimachinery's default handler: under the name UnhandledError,
// attributed to HandleError's caller.
func logUnhandledError(ctx context.Context, err error, msg string, keysAndValues ...interface{}) {
	logger := klog.LoggerWithName(klog.FromContext(ctx).WithCallDepth(3), "UnhandledError")
	logger.Error(err, msg, keysAndValues...)
}
