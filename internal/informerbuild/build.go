// Package informerbuild creates the informers of openinformer's factories (typed,
// dynamic and metadata) from what client-go's would get plus the user's
// options, so the three factories apply them the same way.
package informerbuild

import (
	"context"
	"fmt"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/sharding"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Informer returns openinformer's informer over lw with opts, after
// adjust has set openinformer's fields, restricted to *shard when shard is
// non-nil. A malformed shard is reported now and fails every list and
// watch of this informer with the same error, so it never syncs and never
// silently serves the whole collection; the factory's other informers are
// unaffected.
func Informer(lw cache.ListerWatcher, obj runtime.Object, opts cache.SharedIndexInformerOptions, adjust func(*cache.SharedIndexInformerOptions), shard *sharding.Shard) cache.SharedIndexInformer {
	if adjust != nil {
		adjust(&opts)
	}
	if shard != nil {
		sharded, err := sharding.NewListWatch(lw, *shard)
		if err != nil {
			err = fmt.Errorf("informer for %T: %w", obj, err)
			utilruntime.HandleError(err)
			lw = failing{err}
		} else {
			lw = sharded
		}
	}
	return cache.NewSharedIndexInformerWithOptions(lw, obj, opts)
}

// failing is a ListerWatcher whose every request fails with err.
type failing struct{ err error }

func (f failing) List(metav1.ListOptions) (runtime.Object, error) { return nil, f.err }

func (f failing) Watch(metav1.ListOptions) (watch.Interface, error) { return nil, f.err }

func (f failing) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return nil, f.err
}

func (f failing) WatchWithContext(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, f.err
}
