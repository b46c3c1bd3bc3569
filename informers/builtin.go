package informers

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"time"

	cache "github.com/openinformer/cache"
	build "github.com/openinformer/cache/internal/informerbuild"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
)

// newInformer builds the informer InformerFor stores for obj. For
// client-go's generated constructors it builds openinformer's informer with
// what client-go's would get: the resource's clientset list and watch
// (wrapped for watch-list semantics), the namespace index, resync and the
// identity for the factory's name. Called with f.lock held.
func (f *sharedInformerFactory) newInformer(obj apiruntime.Object, newFunc internalinterfaces.NewInformerFunc, resync time.Duration) cache.SharedIndexInformer {
	if !isGeneratedConstructor(newFunc) {
		return f.withSelector(obj, newFunc(f.client, resync))
	}
	res, ok := f.builtin(reflect.TypeOf(obj))
	if !ok {
		utilruntime.HandleError(fmt.Errorf("informers: %T is not a resource of a group accessor of this factory used so far (or of the client-go it was generated for), so its informer is client-go's", obj))
		return f.withSelector(obj, newFunc(f.client, resync))
	}
	opts := cache.SharedIndexInformerOptions{
		ResyncPeriod: resync,
		Indexers:     cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		Identifier:   f.informerName.WithResource(res.gvr),
	}
	scope := build.SnapshotScope(f.namespace, f.tweakListOptions)
	return f.build.informer(obj, res.gvr, scope, res.listWatch(f.client, f.namespace, f.tweakListOptions), opts)
}

// withSelector gives an informer the factory did not build itself the
// factory's shard selector, as client-go v0.38's factory does, reporting
// the informer's refusal instead of dropping it.
func (f *sharedInformerFactory) withSelector(obj apiruntime.Object, informer cache.SharedIndexInformer) cache.SharedIndexInformer {
	if f.build.selector == nil {
		return informer
	}
	setter, ok := informer.(interface {
		SetShardSelector(apisharding.Selector) error
	})
	if !ok {
		utilruntime.HandleError(fmt.Errorf("informers: the informer for %T (%T) cannot take a shard selector", obj, informer))
		return informer
	}
	if err := setter.SetShardSelector(f.build.selector); err != nil {
		utilruntime.HandleError(fmt.Errorf("informers: shard selector of the informer for %T: %w", obj, err))
	}
	return informer
}

// isGeneratedConstructor reports whether newFunc is the defaultInformer
// method of one of client-go's generated informer packages.
func isGeneratedConstructor(newFunc internalinterfaces.NewInformerFunc) bool {
	fn := runtime.FuncForPC(reflect.ValueOf(newFunc).Pointer())
	if fn == nil {
		return false
	}
	name := fn.Name()
	return strings.HasPrefix(name, "k8s.io/client-go/informers/") && strings.HasSuffix(name, ".defaultInformer-fm")
}

// builtinGroup is one API group's builtinResources by object type. Each
// group's table is built by a function its group accessor passes to use,
// so a program links the clientset calls of the groups it uses only.
type builtinGroup map[reflect.Type]builtinResource

// use makes the group an accessor serves known to InformerFor.
func (f *sharedInformerFactory) use(name string, group func() builtinGroup) {
	f.lock.Lock()
	defer f.lock.Unlock()
	if _, ok := f.groups[name]; !ok {
		f.groups[name] = group()
	}
}

// builtin finds t in the groups used so far. Called with f.lock held.
func (f *sharedInformerFactory) builtin(t reflect.Type) (builtinResource, bool) {
	for _, g := range f.groups {
		if r, ok := g[t]; ok {
			return r, true
		}
	}
	return builtinResource{}, false
}

// builtinResource is how client-go's generated informer for one object
// type reaches its resource: the GVR it is identified by and the clientset
// calls (client.CoreV1().Pods(namespace).List, say) it lists and watches
// with. The calls are plain generated closures: a generic adapter over the
// typed clients would keep every typed client's List and Watch in every
// binary.
type builtinResource struct {
	gvr   schema.GroupVersionResource
	list  func(ctx context.Context, client kubernetes.Interface, namespace string, opts metav1.ListOptions) (apiruntime.Object, error)
	watch func(ctx context.Context, client kubernetes.Interface, namespace string, opts metav1.ListOptions) (watch.Interface, error)
}

// listWatch lists and watches the resource through client as client-go's
// generated informer does, the resource client made per request.
func (r builtinResource) listWatch(client kubernetes.Interface, namespace string, tweak internalinterfaces.TweakListOptionsFunc) cache.ListerWatcher {
	return build.ListWatch(client, tweak,
		func(ctx context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
			return r.list(ctx, client, namespace, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return r.watch(ctx, client, namespace, opts)
		})
}
