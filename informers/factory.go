package informers

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"time"

	cache "github.com/openinformer/cache"
	build "github.com/openinformer/cache/internal/informerbuild"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	clientcache "k8s.io/client-go/tools/cache"
)

// SharedInformerOption configures a factory built by
// NewSharedInformerFactoryWithOptions.
type SharedInformerOption func(*sharedInformerFactory) *sharedInformerFactory

// sharedInformerFactory keeps one informer per object type. lock guards
// every field below it (Shutdown calls runs.Wait without it).
type sharedInformerFactory struct {
	client           kubernetes.Interface
	namespace        string
	tweakListOptions internalinterfaces.TweakListOptionsFunc
	defaultResync    time.Duration
	customResync     map[reflect.Type]time.Duration
	transform        cache.TransformFunc
	informerName     *cache.InformerName
	build            buildOptions

	lock      sync.Mutex
	groups    map[string]builtinGroup
	informers map[reflect.Type]cache.SharedIndexInformer
	runs      build.Runner[reflect.Type]
}

var _ clientinformers.SharedInformerFactory = (*sharedInformerFactory)(nil)

// WithCustomResyncConfig sets the resync period of the informers for the
// given objects' types, overriding the factory's default.
func WithCustomResyncConfig(resyncConfig map[metav1.Object]time.Duration) SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		for obj, period := range resyncConfig {
			f.customResync[reflect.TypeOf(obj)] = period
		}
		return f
	}
}

// WithTweakListOptions sets a function applied to the options of every list
// and watch request.
func WithTweakListOptions(tweakListOptions internalinterfaces.TweakListOptionsFunc) SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		f.tweakListOptions = tweakListOptions
		return f
	}
}

// WithNamespace limits the factory's namespaced informers to one namespace.
func WithNamespace(namespace string) SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		f.namespace = namespace
		return f
	}
}

// WithTransform sets the transform of every informer the factory creates.
func WithTransform(transform cache.TransformFunc) SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		f.transform = transform
		return f
	}
}

// WithInformerName names the factory's informers for metrics; Shutdown
// releases the name. Without it a factory built after a process-wide
// InformerMetricsProvider was installed names them "informers" (or
// "informers-2", ... when taken), so they publish metrics all the same.
func WithInformerName(informerName *cache.InformerName) SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		f.informerName = informerName
		return f
	}
}

// NewSharedInformerFactory returns a factory of informers for every
// namespace, resyncing every defaultResync (0: never).
func NewSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync)
}

// NewFilteredSharedInformerFactory returns a factory limited to namespace
// whose requests pass through tweakListOptions.
//
// Deprecated: Use NewSharedInformerFactoryWithOptions instead.
func NewFilteredSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration, namespace string, tweakListOptions internalinterfaces.TweakListOptionsFunc) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweakListOptions))
}

// NewSharedInformerFactoryWithOptions returns a factory configured by
// options, applied in order.
func NewSharedInformerFactoryWithOptions(client kubernetes.Interface, defaultResync time.Duration, options ...SharedInformerOption) SharedInformerFactory {
	f := &sharedInformerFactory{
		client:        client,
		namespace:     metav1.NamespaceAll,
		defaultResync: defaultResync,
		customResync:  map[reflect.Type]time.Duration{},
		groups:        map[string]builtinGroup{},
		informers:     map[reflect.Type]cache.SharedIndexInformer{},
	}
	for _, opt := range options {
		f = opt(f)
	}
	if f.informerName == nil {
		f.informerName = cache.NewDerivedInformerName("informers")
	}
	return f
}

// InformerName is client-go's name type, which this factory never holds:
// its name is openinformer's (WithInformerName) and is applied by the
// factory itself, so constructors that ask for it get nil.
func (f *sharedInformerFactory) InformerName() *clientcache.InformerName {
	return nil
}

// Start runs every informer created so far that is not running yet, until
// stopCh closes.
func (f *sharedInformerFactory) Start(stopCh <-chan struct{}) {
	f.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext runs every informer created so far that is not running
// yet, until ctx ends. After Shutdown it starts nothing.
func (f *sharedInformerFactory) StartWithContext(ctx context.Context) {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.runs.StartLocked(ctx, maps.All(f.informers))
}

// Shutdown stops starting informers and waits until every started one has
// returned (their context or stop channel must end first), then releases
// the informer name.
func (f *sharedInformerFactory) Shutdown() {
	f.lock.Lock()
	f.runs.StopLocked()
	f.lock.Unlock()
	f.runs.Wait()
	f.informerName.Release()
}

// WaitForCacheSync waits until every started informer has synced or stopCh
// closes, and reports each one's state.
func (f *sharedInformerFactory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.WaitForCacheSyncWithContext(wait.ContextForChannel(stopCh)).Synced
}

// WaitForCacheSyncWithContext waits until every started informer has synced
// or ctx ends; Err is ctx's cause when one has not.
func (f *sharedInformerFactory) WaitForCacheSyncWithContext(ctx context.Context) clientcache.SyncResult {
	started := f.started()
	checkers := make([]cache.DoneChecker, 0, len(started))
	for _, informer := range started {
		checkers = append(checkers, informer.HasSyncedChecker())
	}
	cache.WaitFor(ctx, "", checkers...)
	res := clientcache.SyncResult{Synced: make(map[reflect.Type]bool, len(started))}
	for t, informer := range started {
		res.Synced[t] = informer.HasSynced()
		if !res.Synced[t] {
			res.Err = context.Cause(ctx)
		}
	}
	return res
}

func (f *sharedInformerFactory) started() map[reflect.Type]cache.SharedIndexInformer {
	f.lock.Lock()
	defer f.lock.Unlock()
	started := map[reflect.Type]cache.SharedIndexInformer{}
	for t, informer := range f.informers {
		if f.runs.StartedLocked(t) {
			started[t] = informer
		}
	}
	return started
}

// InformerFor returns the factory's informer for obj's type, creating it on
// first use. client-go's generated constructors (what every group accessor
// passes) are replaced by openinformer's informer for the same resource;
// any other newFunc is called as it is.
func (f *sharedInformerFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	f.lock.Lock()
	defer f.lock.Unlock()
	t := reflect.TypeOf(obj)
	if informer, ok := f.informers[t]; ok {
		return informer
	}
	resync, ok := f.customResync[t]
	if !ok {
		resync = f.defaultResync
	}
	informer := f.newInformer(obj, newFunc, resync)
	if f.transform != nil {
		_ = informer.SetTransform(f.transform)
	}
	f.informers[t] = informer
	return informer
}

// ForResource returns the informer for a built-in resource.
func (f *sharedInformerFactory) ForResource(resource schema.GroupVersionResource) (GenericInformer, error) {
	informer, ok := f.informerForResource(resource)
	if !ok {
		return nil, fmt.Errorf("no informer found for %v", resource)
	}
	return &genericInformer{resource: resource.GroupResource(), informer: informer}, nil
}

// genericInformer is an informer with a lister over its cache.
type genericInformer struct {
	informer cache.SharedIndexInformer
	resource schema.GroupResource
}

// Informer returns the shared informer.
func (g *genericInformer) Informer() cache.SharedIndexInformer { return g.informer }

// Lister lists and gets from the informer's cache.
func (g *genericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(g.informer.GetIndexer(), g.resource)
}

// SharedInformerFactory is client-go's factory interface, which this
// package's factories implement.
type SharedInformerFactory = clientinformers.SharedInformerFactory

// GenericInformer is client-go's informer-and-lister pair ForResource
// returns.
type GenericInformer = clientinformers.GenericInformer
