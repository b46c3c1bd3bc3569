package informers

import (
	"fmt"

	cache "github.com/openinformer/cache"
	build "github.com/openinformer/cache/internal/informerbuild"
	"github.com/openinformer/cache/internal/snapshot"
	"github.com/openinformer/cache/sharding"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// buildOptions are openinformer's settings for the informers the factory
// builds itself; the zero value builds them as client-go would.
type buildOptions struct {
	adjust []func(obj runtime.Object, opts *cache.SharedIndexInformerOptions)
	shard  func(obj runtime.Object) *sharding.Shard
	// selector is every informer's shard selector (WithShardSelector).
	selector apisharding.Selector
	// snapshots, when set, gives every informer a snapshot file
	// (WithSnapshots).
	snapshots *build.Snapshots
}

// WithInformerOptions has fn adjust the options of every informer the
// factory builds for a built-in resource, before it is created. fn gets the
// informer's example object (its type says which resource) and the options
// client-go's informer would have (ResyncPeriod, the namespace Indexers,
// Identifier), and may set openinformer's fields: Compact,
// StripManagedFields, MaxPendingNotificationsPerHandler,
// HandlerMetricsProvider, SlowHandlerThreshold, InformerMetricsProvider.
// Several are applied in order. Informers made by a caller's own newFunc
// passed to InformerFor are the caller's and are not adjusted.
func WithInformerOptions(fn func(obj runtime.Object, opts *cache.SharedIndexInformerOptions)) SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		if fn != nil { // nil adjusts nothing, as client-go's nil tweak
			f.build.adjust = append(f.build.adjust, fn)
		}
		return f
	}
}

// WithShardSelector restricts every informer the factory hands out to the
// objects selector matches, as client-go v0.38's option of the same name
// does: the informers it builds get it as their ShardSelector, and one made
// by a caller's newFunc passed to InformerFor gets it through
// SetShardSelector, whose error is reported.
func WithShardSelector(selector apisharding.Selector) SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		f.build.selector = selector
		return f
	}
}

// WithShard restricts the informers for built-in resources to the shard fn
// returns for their example object; nil means the whole collection.
func WithShard(fn func(obj runtime.Object) *sharding.Shard) SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		f.build.shard = fn
		return f
	}
}

// WithSnapshots turns on warm restarts (docs/RESTART.md) for the informers
// the factory builds for built-in resources: each saves its cache to its
// own file in dir, named after its resource and a hash of its namespace,
// selectors, shard and version (see SnapshotOptions.Version: bump it when
// the transform or the index functions change). dir must exist: an empty
// or missing dir is reported (utilruntime.HandleError) when the factory is
// made, which then builds informers without snapshots.
// WithInformerOptions' fn sees each informer's Snapshot set, and may change
// its Interval or set it nil. Informers made by a caller's own newFunc
// passed to InformerFor are the caller's and get no snapshot.
func WithSnapshots(dir, version string) SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		if err := snapshot.CheckDir(dir); err != nil {
			utilruntime.HandleError(fmt.Errorf("informers.WithSnapshots: %w; snapshots turned off", err))
			return f
		}
		f.build.snapshots = &build.Snapshots{Dir: dir, Version: version}
		return f
	}
}

// informer builds the informer of gvr, whose example object is obj, over
// lw, which lists scope.
func (b buildOptions) informer(obj runtime.Object, gvr schema.GroupVersionResource, scope cache.SnapshotScope, lw cache.ListerWatcher, opts cache.SharedIndexInformerOptions) cache.SharedIndexInformer {
	var shard *sharding.Shard
	if b.shard != nil {
		shard = b.shard(obj)
	}
	return build.Informer(lw, obj, opts, func(o *cache.SharedIndexInformerOptions) {
		o.ShardSelector = b.selector
		b.snapshots.Apply(o, gvr, scope, shard)
		for _, fn := range b.adjust {
			fn(obj, o)
		}
	}, shard)
}
