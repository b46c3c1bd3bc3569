package informers

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
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
	"k8s.io/client-go/kubernetes/scheme"
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
	res, ok := builtins()[reflect.TypeOf(obj)]
	if !ok {
		utilruntime.HandleError(fmt.Errorf("informers: no clientset method lists %T, so its informer is client-go's generated one", obj))
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

// builtinResource is how a clientset reaches one resource:
// client.<group>().<resource>(namespace if namespaced).
type builtinResource struct {
	gvr        schema.GroupVersionResource
	group      string
	resource   string
	namespaced bool
}

// builtins indexes kubernetes.Interface once by the item type of each
// resource client's List result.
var builtins = sync.OnceValue(func() map[reflect.Type]builtinResource {
	out := map[reflect.Type]builtinResource{}
	clientset := reflect.TypeFor[kubernetes.Interface]()
	for i := range clientset.NumMethod() {
		g := clientset.Method(i)
		if g.Type.NumIn() != 0 || g.Type.NumOut() != 1 || g.Type.Out(0).Kind() != reflect.Interface {
			continue
		}
		for j := range g.Type.Out(0).NumMethod() {
			r := g.Type.Out(0).Method(j)
			item, namespaced, ok := resourceClient(r.Type)
			if !ok {
				continue
			}
			gvks, _, err := scheme.Scheme.ObjectKinds(reflect.New(item.Elem()).Interface().(apiruntime.Object))
			if err != nil || len(gvks) == 0 {
				continue
			}
			gvr := gvks[0].GroupVersion().WithResource(strings.ToLower(r.Name))
			out[item] = builtinResource{gvr: gvr, group: g.Name, resource: r.Name, namespaced: namespaced}
		}
	}
	return out
})

var watcherType = reflect.TypeFor[watcher]()

// watcher is the Watch every typed resource client has.
type watcher interface {
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// resourceClient recognises a group client method returning a resource
// client, Pods(namespace string) PodInterface or Nodes() NodeInterface, and
// returns the item type of its List result.
func resourceClient(m reflect.Type) (item reflect.Type, namespaced, ok bool) {
	if m.NumOut() != 1 || m.NumIn() > 1 || m.NumIn() == 1 && m.In(0).Kind() != reflect.String {
		return nil, false, false
	}
	client := m.Out(0)
	list, found := client.MethodByName("List")
	if client.Kind() != reflect.Interface || !found || !client.Implements(watcherType) || list.Type.NumOut() != 2 {
		return nil, false, false
	}
	lt := list.Type.Out(0)
	if lt.Kind() != reflect.Pointer || lt.Elem().Kind() != reflect.Struct {
		return nil, false, false
	}
	items, found := lt.Elem().FieldByName("Items")
	if !found || items.Type.Kind() != reflect.Slice {
		return nil, false, false
	}
	return reflect.PointerTo(items.Type.Elem()), m.NumIn() == 1, true
}

// listWatch lists and watches the resource through client as client-go's
// generated informer does: tweak applied to every request, the resource
// client looked up per request, the ListWatch marked with whether client
// supports watch-list.
func (r builtinResource) listWatch(client kubernetes.Interface, namespace string, tweak internalinterfaces.TweakListOptionsFunc) cache.ListerWatcher {
	target := func() reflect.Value {
		var args []reflect.Value
		if r.namespaced {
			args = []reflect.Value{reflect.ValueOf(namespace)}
		}
		return reflect.ValueOf(client).MethodByName(r.group).Call(nil)[0].MethodByName(r.resource).Call(args)[0]
	}
	list := func(ctx context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
		out := target().MethodByName("List").Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(opts)})
		err, _ := out[1].Interface().(error)
		return out[0].Interface().(apiruntime.Object), err
	}
	watchFn := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return target().Interface().(watcher).Watch(ctx, opts)
	}
	return build.ListWatch(client, tweak, list, watchFn)
}
