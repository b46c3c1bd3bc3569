// Package metadatainformer is client-go's metadata-only shared informer
// factory (k8s.io/client-go/metadata/metadatainformer) building
// openinformer's informers: change the import path and every informer it
// hands out is github.com/openinformer/cache's. The constructors return
// client-go's interface types. NewSharedInformerFactoryWithOptions adds
// openinformer's options, the namespace and request tweak among them, which
// client-go's gives to NewFilteredSharedInformerFactory only.
package metadatainformer

import (
	"context"
	"fmt"
	"time"

	cache "github.com/openinformer/cache"
	build "github.com/openinformer/cache/internal/informerbuild"
	"github.com/openinformer/cache/internal/snapshot"
	"github.com/openinformer/cache/sharding"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	clientmetadatainformer "k8s.io/client-go/metadata/metadatainformer"
)

// SharedInformerFactory is client-go's metadata factory interface.
type SharedInformerFactory = clientmetadatainformer.SharedInformerFactory

// TweakListOptionsFunc adjusts the options of every list and watch request.
type TweakListOptionsFunc = clientmetadatainformer.TweakListOptionsFunc

// SharedInformerOption configures NewSharedInformerFactoryWithOptions.
type SharedInformerOption func(*settings) *settings

// settings are a factory's namespace, request tweak, transform and
// openinformer options.
type settings struct {
	namespace string
	tweak     TweakListOptionsFunc
	transform cache.TransformFunc
	build     build.Options
}

// WithNamespace limits namespaced resources to one namespace, as
// NewFilteredSharedInformerFactory's namespace does.
func WithNamespace(namespace string) SharedInformerOption {
	return func(s *settings) *settings { s.namespace = namespace; return s }
}

// WithTweakListOptions sets a function applied to every list and watch
// request's options, as NewFilteredSharedInformerFactory's tweak does.
func WithTweakListOptions(tweak TweakListOptionsFunc) SharedInformerOption {
	return func(s *settings) *settings { s.tweak = tweak; return s }
}

// WithTransform sets the transform of every informer the factory creates.
func WithTransform(transform cache.TransformFunc) SharedInformerOption {
	return func(s *settings) *settings { s.transform = transform; return s }
}

// WithInformerOptions has fn set openinformer's fields (Compact,
// StripManagedFields, MaxPendingNotificationsPerHandler, handler metrics)
// of each resource's informer options before the informer is created.
// Several are applied in order.
func WithInformerOptions(fn func(gvr schema.GroupVersionResource, opts *cache.SharedIndexInformerOptions)) SharedInformerOption {
	return func(s *settings) *settings {
		if fn != nil { // nil adjusts nothing, as client-go's nil tweak
			s.build.Adjust = append(s.build.Adjust, fn)
		}
		return s
	}
}

// WithShardSelector restricts every informer to the objects selector
// matches, as client-go v0.38's option of the same name does.
func WithShardSelector(selector apisharding.Selector) SharedInformerOption {
	return func(s *settings) *settings { s.build.ShardSelector = selector; return s }
}

// WithSnapshots turns on warm restarts (docs/RESTART.md) for every
// informer of the factory: each saves its cache to its own file in dir,
// named after its resource and a hash of its namespace, selectors, shard
// and version (see SnapshotOptions.Version: bump it when the transform or
// the index functions change). The resource is the one ForResource is
// given, which a PartialObjectMetadata cannot tell. dir must exist: an
// empty or missing dir is reported (utilruntime.HandleError) when the
// factory is made, which then builds informers without snapshots.
// WithInformerOptions' fn sees each informer's Snapshot set, and may change
// its Interval or set it nil.
func WithSnapshots(dir, version string) SharedInformerOption {
	return func(s *settings) *settings {
		if err := snapshot.CheckDir(dir); err != nil {
			utilruntime.HandleError(fmt.Errorf("metadatainformer.WithSnapshots: %w; snapshots turned off", err))
			return s
		}
		s.build.Snapshots = &build.Snapshots{Dir: dir, Version: version}
		return s
	}
}

// WithShard restricts each resource's informer to the shard fn returns for
// it; nil means the whole collection.
func WithShard(fn func(gvr schema.GroupVersionResource) *sharding.Shard) SharedInformerOption {
	return func(s *settings) *settings { s.build.Shard = fn; return s }
}

// NewSharedInformerFactory returns a factory of informers for every
// namespace.
func NewSharedInformerFactory(client metadata.Interface, defaultResync time.Duration) SharedInformerFactory {
	return NewFilteredSharedInformerFactory(client, defaultResync, metav1.NamespaceAll, nil)
}

// NewFilteredSharedInformerFactory returns a factory limited to namespace
// whose requests pass through tweakListOptions.
func NewFilteredSharedInformerFactory(client metadata.Interface, defaultResync time.Duration, namespace string, tweakListOptions TweakListOptionsFunc) SharedInformerFactory {
	return newFactory(client, defaultResync, &settings{namespace: namespace, tweak: tweakListOptions})
}

// NewSharedInformerFactoryWithOptions returns a factory configured by
// options, applied in order; without any it is NewSharedInformerFactory.
func NewSharedInformerFactoryWithOptions(client metadata.Interface, defaultResync time.Duration, options ...SharedInformerOption) SharedInformerFactory {
	s := &settings{namespace: metav1.NamespaceAll}
	for _, opt := range options {
		s = opt(s)
	}
	return newFactory(client, defaultResync, s)
}

func newFactory(client metadata.Interface, defaultResync time.Duration, s *settings) *build.GVRFactory {
	// Named as the typed factory's: metrics without a reserved name.
	s.build.Name = cache.NewDerivedInformerName("metadatainformer")
	return build.NewGVRFactory(s.build.Name, func(gvr schema.GroupVersionResource) clientinformers.GenericInformer {
		informer := newInformer(client, gvr, s.namespace, defaultResync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, s.tweak, s.build)
		_ = informer.Informer().SetTransform(s.transform)
		return informer
	})
}

// NewFilteredMetadataInformer returns an informer for gvr, unshared.
func NewFilteredMetadataInformer(client metadata.Interface, gvr schema.GroupVersionResource, namespace string, resyncPeriod time.Duration, indexers cache.Indexers, tweakListOptions TweakListOptionsFunc) clientinformers.GenericInformer {
	return newInformer(client, gvr, namespace, resyncPeriod, indexers, tweakListOptions, build.Options{})
}

func newInformer(client metadata.Interface, gvr schema.GroupVersionResource, namespace string, resync time.Duration, indexers cache.Indexers, tweak TweakListOptionsFunc, o build.Options) clientinformers.GenericInformer {
	o.Scope = build.SnapshotScope(namespace, tweak)
	lw := build.ListWatch(client, tweak,
		func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.Resource(gvr).Namespace(namespace).List(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.Resource(gvr).Namespace(namespace).Watch(ctx, opts)
		})
	informer := o.Informer(gvr, lw, &metav1.PartialObjectMetadata{}, cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers})
	return &build.GenericInformer{Shared: informer, NewLister: func(indexer cache.Indexer) cache.GenericLister {
		return build.NewShimLister[*metav1.PartialObjectMetadata](indexer, gvr.GroupResource())
	}}
}
