package crcache

import (
	"context"
	"maps"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// byGVK sends each type named in ByObject to its own cache and every
// other type to the default cache.
type byGVK struct {
	env   *environment
	typed map[schema.GroupVersionKind]crcache.Cache
	other crcache.Cache
}

var _ crcache.Cache = &byGVK{}

// cacheOf is the cache of obj's type (a list's item type).
func (d *byGVK) cacheOf(obj runtime.Object) (crcache.Cache, error) {
	gvk, err := apiutil.GVKForObject(obj, d.env.scheme)
	if err != nil {
		return nil, err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return d.cacheOfGVK(gvk), nil
}

func (d *byGVK) cacheOfGVK(gvk schema.GroupVersionKind) crcache.Cache {
	if c, ok := d.typed[gvk]; ok {
		return c
	}
	return d.other
}

// all is every cache, the default one last.
func (d *byGVK) all() []crcache.Cache {
	return append(slices.Collect(maps.Values(d.typed)), d.other)
}

// Get implements client.Reader.
func (d *byGVK) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c, err := d.cacheOf(obj)
	if err != nil {
		return err
	}
	return c.Get(ctx, key, obj, opts...)
}

// List implements client.Reader.
func (d *byGVK) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c, err := d.cacheOf(list)
	if err != nil {
		return err
	}
	return c.List(ctx, list, opts...)
}

// GetInformer implements crcache.Informers.
func (d *byGVK) GetInformer(ctx context.Context, obj client.Object, opts ...crcache.InformerGetOption) (crcache.Informer, error) {
	c, err := d.cacheOf(obj)
	if err != nil {
		return nil, err
	}
	return c.GetInformer(ctx, obj, opts...)
}

// GetInformerForKind implements crcache.Informers.
func (d *byGVK) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...crcache.InformerGetOption) (crcache.Informer, error) {
	return d.cacheOfGVK(gvk).GetInformerForKind(ctx, gvk, opts...)
}

// RemoveInformer implements crcache.Informers.
func (d *byGVK) RemoveInformer(ctx context.Context, obj client.Object) error {
	c, err := d.cacheOf(obj)
	if err != nil {
		return err
	}
	return c.RemoveInformer(ctx, obj)
}

// IndexField implements client.FieldIndexer.
func (d *byGVK) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	c, err := d.cacheOf(obj)
	if err != nil {
		return err
	}
	return c.IndexField(ctx, obj, field, extract)
}

// Start implements crcache.Informers.
func (d *byGVK) Start(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range d.all() {
		g.Go(func() error { return c.Start(gctx) })
	}
	return ignoreCanceled(g.Wait())
}

// WaitForCacheSync implements crcache.Informers.
func (d *byGVK) WaitForCacheSync(ctx context.Context) bool {
	synced := true
	for _, c := range d.all() {
		if !c.WaitForCacheSync(ctx) {
			synced = false
		}
	}
	return synced
}
