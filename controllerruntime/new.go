package crcache

import (
	"fmt"

	cache "github.com/openinformer/cache"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// New returns the constructor a manager takes as ctrl.Options.NewCache.
// The cache it builds honours controller-runtime's cache.Options as
// controller-runtime v0.25.3 does, except NewInformer, which is ignored:
// every informer is openinformer's, configured by ours.
func New(ours Options) crcache.NewCacheFunc {
	return func(cfg *rest.Config, opts crcache.Options) (crcache.Cache, error) {
		return newCache(cfg, opts, ours, nil)
	}
}

// environment is what every leaf of one cache shares.
type environment struct {
	scheme *runtime.Scheme
	mapper meta.RESTMapper
	// listWatchFor makes an informer's ListerWatcher: restClients'
	// unless the cache was built with another source.
	listWatchFor      func(listWatchScope) (cache.ListerWatcher, error)
	watchErrorHandler cache.WatchErrorHandlerWithContext
	failOnMissing     bool
	ours              Options
	byGVK             map[schema.GroupVersionKind]InformerOptions
	names             *informerNames
}

// optionsFor is the openinformer options of gvk's informers.
func (e *environment) optionsFor(gvk schema.GroupVersionKind) InformerOptions {
	if o, ok := e.byGVK[gvk]; ok {
		return o
	}
	return e.ours.Defaults
}

// newCache builds the cache; a nil source lists and watches through
// REST clients made from cfg.
func newCache(cfg *rest.Config, opts crcache.Options, ours Options, source func(listWatchScope) (cache.ListerWatcher, error)) (crcache.Cache, error) {
	if err := ours.validate(); err != nil {
		return nil, err
	}
	opts, err := defaultOptions(cfg, opts)
	if err != nil {
		return nil, err
	}
	env, err := newEnvironment(cfg, opts, ours)
	if err != nil {
		return nil, err
	}
	if source != nil {
		env.listWatchFor = source
	}
	global := globalConfig(&opts)
	var other crcache.Cache
	if len(opts.DefaultNamespaces) > 0 {
		other = newMultiNamespace(env, opts.DefaultNamespaces, &global)
	} else {
		other = newLeaf(env, global, corev1.NamespaceAll)
	}
	if len(opts.ByObject) == 0 {
		return other, nil
	}
	d := &byGVK{env: env, typed: make(map[schema.GroupVersionKind]crcache.Cache, len(opts.ByObject)), other: other}
	for obj, by := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, opts.Scheme)
		if err != nil {
			return nil, fmt.Errorf("failed to get GVK for type %T: %w", obj, err)
		}
		if len(by.Namespaces) > 0 {
			d.typed[gvk] = newMultiNamespace(env, by.Namespaces, nil)
		} else {
			d.typed[gvk] = newLeaf(env, byObjectConfig(by), corev1.NamespaceAll)
		}
	}
	return d, nil
}

// validate checks every informer's options before anything is built.
func (o Options) validate() error {
	if err := o.Defaults.validate(); err != nil {
		return fmt.Errorf("crcache.Options.Defaults: %w", err)
	}
	for obj, io := range o.ByObject {
		if err := io.validate(); err != nil {
			return fmt.Errorf("crcache.Options.ByObject[%T]: %w", obj, err)
		}
	}
	return nil
}

func newEnvironment(cfg *rest.Config, opts crcache.Options, ours Options) (*environment, error) {
	byGVK := make(map[schema.GroupVersionKind]InformerOptions, len(ours.ByObject))
	for obj, o := range ours.ByObject {
		gvk, err := apiutil.GVKForObject(obj, opts.Scheme)
		if err != nil {
			return nil, fmt.Errorf("crcache.Options.ByObject: failed to get GVK for type %T: %w", obj, err)
		}
		byGVK[gvk] = o
	}
	prefix := ours.Name
	if prefix == "" {
		prefix = "controller-runtime"
	}
	return &environment{
		scheme: opts.Scheme,
		mapper: opts.Mapper,
		listWatchFor: (&restClients{
			config:     cfg,
			httpClient: opts.HTTPClient,
			scheme:     opts.Scheme,
			codecs:     serializer.NewCodecFactory(opts.Scheme),
			paramCodec: runtime.NewParameterCodec(opts.Scheme),
		}).listWatch,
		watchErrorHandler: opts.DefaultWatchErrorHandler,
		failOnMissing:     opts.ReaderFailOnMissingInformer,
		ours:              ours,
		byGVK:             byGVK,
		names:             &informerNames{prefix: prefix, on: ours.InformerMetrics != nil || ours.HandlerMetrics != nil},
	}, nil
}
