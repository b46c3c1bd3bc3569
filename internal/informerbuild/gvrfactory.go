package informerbuild

import (
	"context"
	"sync"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/sharding"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/util/wait"
	clientinformers "k8s.io/client-go/informers"
)

// GVRFactory keeps one informer per resource and runs them, for the dynamic
// and metadata factories, which differ only in how an informer is made.
// lock guards informers and runs (but for runs.Wait).
type GVRFactory struct {
	newInformer func(schema.GroupVersionResource) clientinformers.GenericInformer
	// name is the metrics name of the informers, released by Shutdown.
	name *cache.InformerName

	lock      sync.Mutex
	informers map[schema.GroupVersionResource]clientinformers.GenericInformer
	runs      Runner[schema.GroupVersionResource]
}

// NewGVRFactory returns a factory making its informers with newInformer,
// which name for metrics (nil: none); Shutdown releases name.
func NewGVRFactory(name *cache.InformerName, newInformer func(schema.GroupVersionResource) clientinformers.GenericInformer) *GVRFactory {
	return &GVRFactory{
		newInformer: newInformer,
		name:        name,
		informers:   map[schema.GroupVersionResource]clientinformers.GenericInformer{},
	}
}

// ForResource returns the informer for gvr, making it on first use.
func (f *GVRFactory) ForResource(gvr schema.GroupVersionResource) clientinformers.GenericInformer {
	f.lock.Lock()
	defer f.lock.Unlock()
	if informer, ok := f.informers[gvr]; ok {
		return informer
	}
	informer := f.newInformer(gvr)
	f.informers[gvr] = informer
	return informer
}

// Start runs the informers not running yet until stopCh closes.
func (f *GVRFactory) Start(stopCh <-chan struct{}) {
	f.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext runs the informers not running yet until ctx ends;
// after Shutdown it starts nothing.
func (f *GVRFactory) StartWithContext(ctx context.Context) {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.runs.StartLocked(ctx, func(yield func(schema.GroupVersionResource, cache.SharedIndexInformer) bool) {
		for gvr, informer := range f.informers {
			if !yield(gvr, informer.Informer()) {
				return
			}
		}
	})
}

// WaitForCacheSync waits for each started informer in turn to sync, until
// stopCh closes, and reports which did.
func (f *GVRFactory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	res := map[schema.GroupVersionResource]bool{}
	for gvr, informer := range f.started() {
		res[gvr] = cache.WaitForCacheSync(stopCh, informer.HasSynced)
	}
	return res
}

// waitSynced waits, without polling, until every started informer has
// synced or ctx ends, and reports each one's state and, if any has not
// synced, why waiting stopped (context.Cause of ctx).
func (f *GVRFactory) waitSynced(ctx context.Context) (map[schema.GroupVersionResource]bool, error) {
	started := f.started()
	checkers := make([]cache.DoneChecker, 0, len(started))
	for _, informer := range started {
		checkers = append(checkers, informer.HasSyncedChecker())
	}
	cache.WaitFor(ctx, "", checkers...)
	synced := make(map[schema.GroupVersionResource]bool, len(started))
	var err error
	for gvr, informer := range started {
		if synced[gvr] = informer.HasSynced(); !synced[gvr] {
			err = context.Cause(ctx)
		}
	}
	return synced, err
}

// started returns the informers Start has run, by resource.
func (f *GVRFactory) started() map[schema.GroupVersionResource]cache.SharedIndexInformer {
	f.lock.Lock()
	defer f.lock.Unlock()
	started := map[schema.GroupVersionResource]cache.SharedIndexInformer{}
	for gvr, informer := range f.informers {
		if f.runs.StartedLocked(gvr) {
			started[gvr] = informer.Informer()
		}
	}
	return started
}

// Shutdown stops starting informers, waits for the started ones to
// return, then releases the informers' name. Calls may overlap; each waits.
func (f *GVRFactory) Shutdown() {
	f.lock.Lock()
	f.runs.StopLocked()
	f.lock.Unlock()
	f.runs.Wait()
	f.name.Release()
}

// Options are openinformer's settings for a dynamic or metadata factory's
// informers; the zero value builds them as client-go would.
type Options struct {
	// Adjust sets openinformer's fields of a resource's informer options.
	Adjust []func(schema.GroupVersionResource, *cache.SharedIndexInformerOptions)
	// Shard, when set, returns the shard of a resource (nil: all of it).
	Shard func(schema.GroupVersionResource) *sharding.Shard
	// ShardSelector, when set, is every informer's ShardSelector (client-go
	// v0.38's WithShardSelector).
	ShardSelector apisharding.Selector
	// Snapshots, when set, gives every informer a snapshot file of its own
	// under Snapshots.Dir, for Scope.
	Snapshots *Snapshots
	// Scope is what the factory's informers list beyond their resource:
	// its namespace and request tweak (see SnapshotScope).
	Scope cache.SnapshotScope
	// Name, when set, is the metrics name of the informers: each gets
	// Name.WithResource(gvr) as its Identifier, which Adjust may change.
	Name *cache.InformerName
}

// Informer is the package-level Informer with o applied for gvr.
func (o Options) Informer(gvr schema.GroupVersionResource, lw cache.ListerWatcher, obj runtime.Object, opts cache.SharedIndexInformerOptions) cache.SharedIndexInformer {
	var shard *sharding.Shard
	if o.Shard != nil {
		shard = o.Shard(gvr)
	}
	return Informer(lw, obj, opts, func(opts *cache.SharedIndexInformerOptions) {
		opts.ShardSelector = o.ShardSelector
		if o.Name != nil {
			opts.Identifier = o.Name.WithResource(gvr)
		}
		o.Snapshots.Apply(opts, gvr, o.Scope, shard)
		for _, fn := range o.Adjust {
			fn(gvr, opts)
		}
	}, shard)
}
