package crcache

import (
	"context"
	"net/http"

	cache "github.com/openinformer/cache"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// restClients makes the list-watches of one cache from its REST config.
type restClients struct {
	config     *rest.Config
	httpClient *http.Client
	scheme     *runtime.Scheme
	codecs     serializer.CodecFactory
	paramCodec runtime.ParameterCodec
}

// listWatchScope is what one informer's requests carry besides its type.
type listWatchScope struct {
	gvk       schema.GroupVersionKind
	mapping   *meta.RESTMapping
	rep       representation
	namespace string
	label     string // "" sends none
	field     string
	bookmarks bool
}

// applyTo sets the selectors on a request's options; a watch also asks
// for bookmarks if configured, and always when it is a watch-list stream
// (sendInitialEvents), which the server refuses without them.
func (s listWatchScope) applyTo(o *metav1.ListOptions, watching bool) {
	if s.label != "" {
		o.LabelSelector = s.label
	}
	if s.field != "" {
		o.FieldSelector = s.field
	}
	if watching {
		o.Watch = true
		o.AllowWatchBookmarks = s.bookmarks || o.SendInitialEvents != nil
	}
}

// listWatch returns the ListerWatcher of one informer: the typed REST
// client, the dynamic client or the metadata client, by representation.
func (r *restClients) listWatch(s listWatchScope) (cache.ListerWatcher, error) {
	switch s.rep {
	case repUnstructured:
		return r.dynamicListWatch(s)
	case repMetadata:
		return r.metadataListWatch(s)
	}
	return r.typedListWatch(s)
}

// plainConfig is the config without a negotiated serializer, which the
// dynamic and metadata clients set themselves.
func (r *restClients) plainConfig() *rest.Config {
	c := rest.CopyConfig(r.config)
	c.NegotiatedSerializer = nil
	return c
}

func (r *restClients) dynamicListWatch(s listWatchScope) (cache.ListerWatcher, error) {
	dc, err := dynamic.NewForConfigAndClient(r.plainConfig(), r.httpClient)
	if err != nil {
		return nil, err
	}
	var res dynamic.ResourceInterface = dc.Resource(s.mapping.Resource)
	if s.namespace != "" {
		res = dc.Resource(s.mapping.Resource).Namespace(s.namespace)
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			s.applyTo(&o, false)
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			s.applyTo(&o, true)
			return res.Watch(ctx, o)
		},
	}, dc), nil
}

func (r *restClients) metadataListWatch(s listWatchScope) (cache.ListerWatcher, error) {
	mc, err := metadata.NewForConfigAndClient(r.plainConfig(), r.httpClient)
	if err != nil {
		return nil, err
	}
	var res metadata.ResourceInterface = mc.Resource(s.mapping.Resource)
	if s.namespace != "" {
		res = mc.Resource(s.mapping.Resource).Namespace(s.namespace)
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			s.applyTo(&o, false)
			list, err := res.List(ctx, o)
			if list != nil {
				for i := range list.Items {
					list.Items[i].SetGroupVersionKind(s.gvk)
				}
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			s.applyTo(&o, true)
			w, err := res.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			// The metadata client's events carry no kind; handlers and
			// the cache need it.
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				e.Object.GetObjectKind().SetGroupVersionKind(s.gvk)
				return e, true
			}), nil
		},
	}, mc), nil
}

func (r *restClients) typedListWatch(s listWatchScope) (cache.ListerWatcher, error) {
	rc, err := apiutil.RESTClientForGVK(s.gvk, false, false, r.config, r.codecs, r.httpClient)
	if err != nil {
		return nil, err
	}
	listObj, err := r.scheme.New(s.gvk.GroupVersion().WithKind(s.gvk.Kind + "List"))
	if err != nil {
		return nil, err
	}
	request := func(o *metav1.ListOptions) *rest.Request {
		req := rc.Get().Resource(s.mapping.Resource.Resource).VersionedParams(o, r.paramCodec)
		if s.namespace != "" {
			req.Namespace(s.namespace)
		}
		return req
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			s.applyTo(&o, false)
			out := listObj.DeepCopyObject()
			if err := request(&o).Do(ctx).Into(out); err != nil {
				return nil, err
			}
			return out, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			s.applyTo(&o, true)
			return request(&o).Watch(ctx)
		},
	}, rc), nil
}
