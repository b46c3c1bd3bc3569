package main

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	cache "github.com/openinformer/cache"
)

// countingListerWatcher counts the requests an informer makes, to report
// relists, and remembers the last failed one's error, to say why a sync
// hangs. It keeps the wrapped source's watch-list opt-out visible.
type countingListerWatcher struct {
	inner                       cache.ListerWatcher
	listCount, watchCount, sent atomic.Int64
	failure                     atomic.Pointer[error]
}

func (c *countingListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), opts)
}

func (c *countingListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), opts)
}

func (c *countingListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if opts.Continue == "" {
		c.listCount.Add(1)
	}
	list, err := cache.ToListerWatcherWithContext(c.inner).ListWithContext(ctx, opts)
	c.note(err)
	return list, err
}

func (c *countingListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	c.watchCount.Add(1)
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		c.sent.Add(1)
	}
	w, err := cache.ToListerWatcherWithContext(c.inner).WatchWithContext(ctx, opts)
	c.note(err)
	return w, err
}

// note remembers a request's error. Reflectors retry some failures, such as
// a refused connection, without reporting them anywhere a user would see.
func (c *countingListerWatcher) note(err error) {
	if err != nil {
		c.failure.Store(&err)
	}
}

// lastError is the error of the last request that failed, or nil.
func (c *countingListerWatcher) lastError() error {
	if p := c.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// IsWatchListSemanticsUnSupported forwards the wrapped source's answer.
func (c *countingListerWatcher) IsWatchListSemanticsUnSupported() bool {
	u, ok := c.inner.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

func (c *countingListerWatcher) lists() int64   { return c.listCount.Load() }
func (c *countingListerWatcher) watches() int64 { return c.watchCount.Load() }
func (c *countingListerWatcher) streams() int64 { return c.sent.Load() }

// syncs counts full syncs: LISTs (their first pages) plus watch-list streams.
func (c *countingListerWatcher) syncs() int64 { return c.lists() + c.streams() }
