// Package genfactory carries openinformer's factory options into a
// project's informer-gen output (pkg/generated/informers/externalversions),
// so that a generated factory takes WithInformerOptions, WithSnapshots,
// WithShard and WithShardSelector as openinformer's typed factory does.
//
// openinformer-rewrite wires it in; code never needs to name it. It adds an
// Options field to the generated factory and the four options that fill
// it, an OpenInformer field to the generated internalinterfaces'
// InformerOptions, which each generated defaultInformer fills from its
// factory, and routes each generated constructor's
// cache.NewSharedIndexInformerWithOptions call through that field's
// Builder. The constructor still builds its own ListerWatcher (namespace,
// tweak-list-options, watch-list semantics) and Identifier (the factory's
// InformerName), and the factory still applies its transform; the Builder
// adds openinformer's options on top. A constructor called directly, with
// no factory, gets a nil Builder and builds its informer as before.
package genfactory

import (
	cache "github.com/openinformer/cache"
	build "github.com/openinformer/cache/internal/informerbuild"
	"github.com/openinformer/cache/sharding"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
)

// Options are a generated factory's openinformer options; the zero value
// builds every informer as informer-gen's code does.
type Options struct {
	adjust    []func(obj runtime.Object, opts *cache.SharedIndexInformerOptions)
	shard     func(obj runtime.Object) *sharding.Shard
	selector  apisharding.Selector
	snapshots *build.Snapshots
}

// AddInformerOptions has fn adjust the options of every informer the
// factory's generated constructors build, after the others added before.
func (o *Options) AddInformerOptions(fn func(obj runtime.Object, opts *cache.SharedIndexInformerOptions)) {
	o.adjust = append(o.adjust, fn)
}

// SetSnapshots gives every informer the factory's generated constructors
// build a snapshot file in dir (see informers.WithSnapshots).
func (o *Options) SetSnapshots(dir, version string) {
	o.snapshots = &build.Snapshots{Dir: dir, Version: version}
}

// SetShard restricts each informer to the shard fn returns for its example
// object; nil means the whole collection.
func (o *Options) SetShard(fn func(obj runtime.Object) *sharding.Shard) {
	o.shard = fn
}

// SetShardSelector restricts every informer the generated constructors
// build to the objects selector matches; a factory generated with its own
// shard selector (client-go v0.38's informer-gen) passes that one to
// Builder instead.
func (o *Options) SetShardSelector(selector apisharding.Selector) {
	o.selector = selector
}

// Builder returns how the factory's generated constructors build its
// informers: scoped, for snapshot files, by the factory's namespace and
// tweak, and restricted to selector when it is non-nil (else to the one
// SetShardSelector set).
func (o *Options) Builder(namespace string, tweak func(*metav1.ListOptions), selector apisharding.Selector) *Builder {
	if selector == nil {
		selector = o.selector
	}
	return &Builder{options: o, scope: build.SnapshotScope(namespace, tweak), selector: selector}
}

// Builder builds a generated factory's informers with its openinformer
// options. A nil *Builder builds them as informer-gen's code does.
type Builder struct {
	options  *Options
	scope    cache.SnapshotScope
	selector apisharding.Selector
}

// NewSharedIndexInformerWithOptions is what a generated constructor calls
// instead of cache.NewSharedIndexInformerWithOptions, with its resource:
// the informer over lw with opts, adjusted by the factory's options.
func (b *Builder) NewSharedIndexInformerWithOptions(gvr schema.GroupVersionResource, lw cache.ListerWatcher, obj runtime.Object, opts cache.SharedIndexInformerOptions) cache.SharedIndexInformer {
	if b == nil {
		return cache.NewSharedIndexInformerWithOptions(lw, obj, opts)
	}
	var shard *sharding.Shard
	if b.options.shard != nil {
		shard = b.options.shard(obj)
	}
	return build.Informer(lw, obj, opts, func(o *cache.SharedIndexInformerOptions) {
		o.ShardSelector = b.selector
		b.options.snapshots.Apply(o, gvr, b.scope, shard)
		for _, fn := range b.options.adjust {
			fn(obj, o)
		}
	}, shard)
}

// Of returns factory's Builder when it is a generated factory
// openinformer-rewrite has given options, and nil otherwise.
func Of(factory any) *Builder {
	if f, ok := factory.(interface{ OpenInformerBuilder() *Builder }); ok {
		return f.OpenInformerBuilder()
	}
	return nil
}
