package crcache

import (
	"context"
	"fmt"
	"strings"

	cache "github.com/openinformer/cache"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// leafCache is a cache of one scope (a namespace or all, one Config): the
// building block New composes as controller-runtime composes its own.
type leafCache struct {
	*informers
}

var _ crcache.Cache = &leafCache{}

func newLeaf(env *environment, c crcache.Config, namespace string) *leafCache {
	return &leafCache{informers: newInformers(env, leafConfig{namespace: namespace, config: c})}
}

// Get implements client.Reader.
func (c *leafCache) Get(ctx context.Context, key client.ObjectKey, out client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(out, c.env.scheme)
	if err != nil {
		return err
	}
	r, err := c.readerOf(ctx, gvk, out)
	if err != nil {
		return err
	}
	return r.Get(ctx, key, out, opts...)
}

// readerOf is the reader of gvk's informer in obj's representation,
// once the cache has started and the informer has synced.
func (c *leafCache) readerOf(ctx context.Context, gvk schema.GroupVersionKind, obj runtime.Object) (*reader, error) {
	e, started, err := c.get(ctx, gvk, obj, c.env.failOnMissing, true)
	if err != nil {
		return nil, err
	}
	if !started {
		return nil, &crcache.ErrCacheNotStarted{}
	}
	return e.reader, nil
}

// List implements client.Reader.
func (c *leafCache) List(ctx context.Context, out client.ObjectList, opts ...client.ListOption) error {
	gvk, obj, err := c.itemType(out)
	if err != nil {
		return err
	}
	r, err := c.readerOf(ctx, gvk, obj)
	if err != nil {
		return err
	}
	return r.List(ctx, out, opts...)
}

// itemType is the GVK and an example object of a list's items, in the
// list's representation.
func (c *leafCache) itemType(list client.ObjectList) (schema.GroupVersionKind, runtime.Object, error) {
	gvk, err := apiutil.GVKForObject(list, c.env.scheme)
	if err != nil {
		return schema.GroupVersionKind{}, nil, err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	switch list.(type) {
	case runtime.Unstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return gvk, u, nil
	case *metav1.PartialObjectMetadataList:
		p := &metav1.PartialObjectMetadata{}
		p.SetGroupVersionKind(gvk)
		return gvk, p, nil
	}
	obj, err := c.env.scheme.New(gvk)
	return gvk, obj, err
}

// GetInformer implements crcache.Informers.
func (c *leafCache) GetInformer(ctx context.Context, obj client.Object, opts ...crcache.InformerGetOption) (crcache.Informer, error) {
	gvk, err := apiutil.GVKForObject(obj, c.env.scheme)
	if err != nil {
		return nil, err
	}
	e, _, err := c.get(ctx, gvk, obj, false, blockUntilSynced(opts))
	if err != nil {
		return nil, err
	}
	return e.handed(), nil
}

// GetInformerForKind implements crcache.Informers.
func (c *leafCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...crcache.InformerGetOption) (crcache.Informer, error) {
	obj, err := c.env.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	e, _, err := c.get(ctx, gvk, obj, false, blockUntilSynced(opts))
	if err != nil {
		return nil, err
	}
	return e.handed(), nil
}

// blockUntilSynced is the BlockUntilSynced option, true by default.
func blockUntilSynced(opts []crcache.InformerGetOption) bool {
	o := crcache.InformerGetOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	return o.BlockUntilSynced == nil || *o.BlockUntilSynced
}

// RemoveInformer implements crcache.Informers.
func (c *leafCache) RemoveInformer(_ context.Context, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, c.env.scheme)
	if err != nil {
		return err
	}
	c.remove(gvk, obj)
	return nil
}

// Start implements crcache.Informers.
func (c *leafCache) Start(ctx context.Context) error { return c.start(ctx) }

// WaitForCacheSync implements crcache.Informers.
func (c *leafCache) WaitForCacheSync(ctx context.Context) bool { return c.waitForCacheSync(ctx) }

// NeedLeaderElection tells the manager that the cache runs on every
// replica, leader or not.
func (c *leafCache) NeedLeaderElection() bool { return false }

// IndexField implements client.FieldIndexer.
func (c *leafCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	inf, err := c.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	return indexByField(inf, field, extract)
}

// indexByField adds the index controller-runtime's readers query for a
// field selector on field: each value under the object's namespace and,
// for namespaced objects, under the all-namespaces marker too.
func indexByField(inf crcache.Informer, field string, extract client.IndexerFunc) error {
	fn := func(raw any) ([]string, error) {
		obj, ok := raw.(client.Object)
		if !ok {
			return nil, fmt.Errorf("object of type %T is not an Object", raw)
		}
		m, err := apimeta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		ns := m.GetNamespace()
		raws := extract(obj)
		vals := make([]string, 0, 2*len(raws))
		for _, v := range raws {
			vals = append(vals, namespacedIndexValue(ns, v))
		}
		if ns != "" {
			for _, v := range raws {
				vals = append(vals, namespacedIndexValue("", v))
			}
		}
		return vals, nil
	}
	return inf.AddIndexers(cache.Indexers{fieldIndexName(field): fn})
}
