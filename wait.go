package cache

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// cacheSyncPollInterval is how often WaitForCacheSync re-checks its
// InformerSynced functions.
const cacheSyncPollInterval = 100 * time.Millisecond

// WaitForCacheSync waits until every cacheSyncs function reports true,
// checking at once and then every 100ms. It returns false if stopCh closes
// first. Prefer WaitFor with DoneCheckers, which does not poll.
func WaitForCacheSync(stopCh <-chan struct{}, cacheSyncs ...InformerSynced) bool {
	allSynced := func() bool {
		for _, synced := range cacheSyncs {
			if !synced() {
				return false
			}
		}
		return true
	}
	if allSynced() {
		return true
	}
	ticker := time.NewTicker(cacheSyncPollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-stopCh:
			return false
		case <-ticker.C:
			if allSynced() {
				return true
			}
		}
	}
}

// WaitForNamedCacheSync is WaitForCacheSync that logs, under the given
// controller name, when waiting starts and how it ended.
func WaitForNamedCacheSync(controllerName string, stopCh <-chan struct{}, cacheSyncs ...InformerSynced) bool {
	logger := klog.Background()
	logger.Info("Waiting for caches to sync", "controller", controllerName)
	if !WaitForCacheSync(stopCh, cacheSyncs...) {
		utilruntime.HandleErrorWithContext(context.Background(), nil, "Unable to sync caches", "controller", controllerName)
		return false
	}
	logger.Info("Caches are synced", "controller", controllerName)
	return true
}

// WaitForNamedCacheSyncWithContext is WaitForNamedCacheSync that stops when
// ctx ends and logs with ctx's logger (which identifies the caller).
func WaitForNamedCacheSyncWithContext(ctx context.Context, cacheSyncs ...InformerSynced) bool {
	logger := klog.FromContext(ctx)
	logger.Info("Waiting for caches to sync")
	if !WaitForCacheSync(ctx.Done(), cacheSyncs...) {
		utilruntime.HandleErrorWithContext(ctx, nil, "Unable to sync caches")
		return false
	}
	logger.Info("Caches are synced")
	return true
}

// WaitFor blocks until every checker is done or ctx ends, without polling.
// It reports whether all of them finished; a checker that finished at the
// same moment ctx ended counts as finished. With a non-empty what, progress
// is logged at ctx's logger: when waiting starts, as each checker finishes,
// and which ones were still unfinished on timeout.
func WaitFor(ctx context.Context, what string, checkers ...DoneChecker) bool {
	logger := klog.FromContext(ctx)
	if what != "" {
		// Attribute the log lines to WaitFor's caller.
		helper, l := logger.WithCallStackHelper()
		helper()
		logger = l
		logger.Info("Waiting", "for", what)
	}
	pending := slices.Clone(checkers)
	for len(pending) > 0 {
		i, ok := waitForAnyDone(ctx, pending)
		if !ok {
			break
		}
		if what != "" {
			logger.Info("Done waiting", "for", what, "instance", pending[i].Name())
		}
		pending = slices.Delete(pending, i, i+1)
	}
	// ctx ended: whatever finished meanwhile still counts, and is logged
	// as done before the timeout line, as client-go does.
	var unfinished []string
	for _, c := range pending {
		if !IsDone(c) {
			unfinished = append(unfinished, c.Name())
		} else if what != "" {
			logger.Info("Done waiting", "for", what, "instance", c.Name())
		}
	}
	if len(unfinished) == 0 {
		return true
	}
	if what != "" {
		slices.Sort(unfinished)
		logger.Info("Timed out waiting", "for", what, "cause", context.Cause(ctx), "instances", unfinished)
	}
	return false
}

// waitForAnyDone blocks until one checker is done (returning its index) or
// ctx ends (returning false). A dynamic select keeps WaitFor free of helper
// goroutines while still reporting completions in the order they happen.
func waitForAnyDone(ctx context.Context, checkers []DoneChecker) (int, bool) {
	cases := make([]reflect.SelectCase, 0, len(checkers)+1)
	for _, c := range checkers {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.Done())})
	}
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	chosen, _, _ := reflect.Select(cases)
	if chosen == len(checkers) {
		return 0, false
	}
	return chosen, true
}

// IsDone reports, without blocking, whether checker is done.
func IsDone(checker DoneChecker) bool {
	select {
	case <-checker.Done():
		return true
	default:
		return false
	}
}

// SyncResult summarizes waiting for a set of informers: Err is why waiting
// stopped early (nil when everything synced) and Synced tells, per informer
// type, whether it synced.
type SyncResult struct {
	Err    error
	Synced map[reflect.Type]bool
}

// AsError returns nil when everything synced, otherwise an error naming the
// unsynced types (sorted) and wrapping Err.
func (r SyncResult) AsError() error {
	if r.Err == nil {
		return nil
	}
	var unsynced []string
	for t, synced := range r.Synced {
		if !synced {
			unsynced = append(unsynced, t.String())
		}
	}
	slices.Sort(unsynced)
	return fmt.Errorf("failed to sync all caches: %s: %w", strings.Join(unsynced, ", "), r.Err)
}
