// Package dynamicinformer is client-go's dynamic shared informer factory
// (k8s.io/client-go/dynamic/dynamicinformer) building openinformer's
// informers: change the import path and every informer it hands out is
// github.com/openinformer/cache's. The constructors return client-go's
// interface types. NewDynamicSharedInformerFactoryWithOptions adds
// openinformer's options.
package dynamicinformer

import (
	"context"
	"fmt"
	"time"

	cache "github.com/openinformer/cache"
	build "github.com/openinformer/cache/internal/informerbuild"
	"github.com/openinformer/cache/internal/snapshot"
	"github.com/openinformer/cache/sharding"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	clientdynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"
	clientinformers "k8s.io/client-go/informers"
)

// DynamicSharedInformerFactory is client-go's dynamic factory interface.
type DynamicSharedInformerFactory = clientdynamicinformer.DynamicSharedInformerFactory

// TweakListOptionsFunc adjusts the options of every list and watch request.
type TweakListOptionsFunc = clientdynamicinformer.TweakListOptionsFunc

// SharedInformerOption configures NewDynamicSharedInformerFactoryWithOptions.
type SharedInformerOption func(*settings)

// settings are a factory's namespace, request tweak and openinformer options.
type settings struct {
	namespace string
	tweak     TweakListOptionsFunc
	build     build.Options
}

// WithNamespace limits namespaced resources to one namespace.
func WithNamespace(namespace string) SharedInformerOption {
	return func(s *settings) { s.namespace = namespace }
}

// WithTweakListOptions sets a function applied to every list and watch
// request's options.
func WithTweakListOptions(tweak TweakListOptionsFunc) SharedInformerOption {
	return func(s *settings) { s.tweak = tweak }
}

// WithInformerOptions has fn set openinformer's fields (Compact,
// StripManagedFields, MaxPendingNotificationsPerHandler, handler metrics)
// of each resource's informer options before the informer is created.
// Several are applied in order.
func WithInformerOptions(fn func(gvr schema.GroupVersionResource, opts *cache.SharedIndexInformerOptions)) SharedInformerOption {
	return func(s *settings) {
		if fn != nil { // nil adjusts nothing, as client-go's nil tweak
			s.build.Adjust = append(s.build.Adjust, fn)
		}
	}
}

// WithShardSelector restricts every informer to the objects selector
// matches, as client-go v0.38's option of the same name does.
func WithShardSelector(selector apisharding.Selector) SharedInformerOption {
	return func(s *settings) { s.build.ShardSelector = selector }
}

// WithSnapshots turns on warm restarts (docs/RESTART.md) for every
// informer of the factory: each saves its cache to its own file in dir,
// named after its resource and a hash of its namespace, selectors, shard
// and version (see SnapshotOptions.Version: bump it when the transform or
// the index functions change). dir must exist: an empty or missing dir is
// reported (utilruntime.HandleError) when the factory is made, which then
// builds informers without snapshots. WithInformerOptions' fn sees each
// informer's Snapshot set, and may change its Interval or set it nil.
func WithSnapshots(dir, version string) SharedInformerOption {
	return func(s *settings) {
		if err := snapshot.CheckDir(dir); err != nil {
			utilruntime.HandleError(fmt.Errorf("dynamicinformer.WithSnapshots: %w; snapshots turned off", err))
			return
		}
		s.build.Snapshots = &build.Snapshots{Dir: dir, Version: version}
	}
}

// WithShard restricts each resource's informer to the shard fn returns for
// it; nil means the whole collection.
func WithShard(fn func(gvr schema.GroupVersionResource) *sharding.Shard) SharedInformerOption {
	return func(s *settings) { s.build.Shard = fn }
}

// NewDynamicSharedInformerFactory returns a factory of informers for every
// namespace.
func NewDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration) DynamicSharedInformerFactory {
	return NewFilteredDynamicSharedInformerFactory(client, defaultResync, metav1.NamespaceAll, nil)
}

// NewFilteredDynamicSharedInformerFactory returns a factory limited to
// namespace whose requests pass through tweakListOptions.
func NewFilteredDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration, namespace string, tweakListOptions TweakListOptionsFunc) DynamicSharedInformerFactory {
	return NewDynamicSharedInformerFactoryWithOptions(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweakListOptions))
}

// NewDynamicSharedInformerFactoryWithOptions returns a factory configured by
// options, applied in order; without any it is NewDynamicSharedInformerFactory.
func NewDynamicSharedInformerFactoryWithOptions(client dynamic.Interface, defaultResync time.Duration, options ...SharedInformerOption) DynamicSharedInformerFactory {
	s := settings{namespace: metav1.NamespaceAll}
	for _, opt := range options {
		opt(&s)
	}
	// Named as the typed factory's: metrics without a reserved name.
	s.build.Name = cache.NewDerivedInformerName("dynamicinformer")
	return build.NewGVRFactory(s.build.Name, func(gvr schema.GroupVersionResource) clientinformers.GenericInformer {
		return newInformer(client, gvr, s.namespace, defaultResync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, s.tweak, s.build)
	})
}

// NewFilteredDynamicInformer returns an informer for gvr, unshared.
func NewFilteredDynamicInformer(client dynamic.Interface, gvr schema.GroupVersionResource, namespace string, resyncPeriod time.Duration, indexers cache.Indexers, tweakListOptions TweakListOptionsFunc) clientinformers.GenericInformer {
	return newInformer(client, gvr, namespace, resyncPeriod, indexers, tweakListOptions, build.Options{})
}

func newInformer(client dynamic.Interface, gvr schema.GroupVersionResource, namespace string, resync time.Duration, indexers cache.Indexers, tweak TweakListOptionsFunc, o build.Options) clientinformers.GenericInformer {
	o.Scope = build.SnapshotScope(namespace, tweak)
	lw := build.ListWatch(client, tweak,
		func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.Resource(gvr).Namespace(namespace).List(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.Resource(gvr).Namespace(namespace).Watch(ctx, opts)
		})
	informer := o.Informer(gvr, lw, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{
		ResyncPeriod:      resync,
		Indexers:          indexers,
		ObjectDescription: gvr.String(),
	})
	return &build.GenericInformer{Shared: informer, NewLister: func(indexer cache.Indexer) cache.GenericLister {
		return build.NewShimLister[*unstructured.Unstructured](indexer, gvr.GroupResource())
	}}
}
