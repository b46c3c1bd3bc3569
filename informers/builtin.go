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
		return newFunc(f.client, resync)
	}
	res, ok := builtins[reflect.TypeOf(obj)]
	if !ok {
		utilruntime.HandleError(fmt.Errorf("informers: %T is not a resource of the client-go this module was generated for, so its informer is client-go's", obj))
		return newFunc(f.client, resync)
	}
	opts := cache.SharedIndexInformerOptions{
		ResyncPeriod: resync,
		Indexers:     cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		Identifier:   f.informerName.WithResource(res.gvr),
	}
	return f.build.informer(obj, res.listWatch(f.client, f.namespace, f.tweakListOptions), opts)
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

// builtinResource is how client-go's generated informer for one object
// type reaches its resource: the GVR it is identified by and the clientset
// call (client.CoreV1().Pods(namespace), say) it lists and watches with.
type builtinResource struct {
	gvr    schema.GroupVersionResource
	client func(client kubernetes.Interface, namespace string) typedClient
}

// typedClient is a typed resource client's List and Watch, List's result
// as a runtime.Object.
type typedClient struct {
	list  func(context.Context, metav1.ListOptions) (apiruntime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// typed adapts a typed resource client, whatever its list type.
func typed[L apiruntime.Object](c interface {
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}) typedClient {
	return typedClient{
		list:  func(ctx context.Context, opts metav1.ListOptions) (apiruntime.Object, error) { return c.List(ctx, opts) },
		watch: c.Watch,
	}
}

// listWatch lists and watches the resource through client as client-go's
// generated informer does, the resource client made per request.
func (r builtinResource) listWatch(client kubernetes.Interface, namespace string, tweak internalinterfaces.TweakListOptionsFunc) cache.ListerWatcher {
	return build.ListWatch(client, tweak,
		func(ctx context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
			return r.client(client, namespace).list(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return r.client(client, namespace).watch(ctx, opts)
		})
}
