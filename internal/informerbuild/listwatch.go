package informerbuild

import (
	"context"

	cache "github.com/openinformer/cache"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// ListWatch lists and watches with list and watchFn the way client-go's
// generated informers do: tweak (when set) applied to every request's
// options, context.Background() for the calls without a context, and the
// result marked with whether client supports watch-list streaming.
func ListWatch(client any, tweak func(*metav1.ListOptions), list func(context.Context, metav1.ListOptions) (runtime.Object, error), watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) cache.ListerWatcher {
	tweaked := func(opts metav1.ListOptions) metav1.ListOptions {
		if tweak != nil {
			tweak(&opts)
		}
		return opts
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			return list(context.Background(), tweaked(opts))
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			return watchFn(context.Background(), tweaked(opts))
		},
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, tweaked(opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return watchFn(ctx, tweaked(opts))
		},
	}, client)
}
