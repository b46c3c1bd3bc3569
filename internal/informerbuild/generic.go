package informerbuild

import (
	cache "github.com/openinformer/cache"
)

// GenericInformer is a resource's informer with the lister its factory
// reads it through (dynamic or metadata objects), client-go's
// informers.GenericInformer.
type GenericInformer struct {
	Shared    cache.SharedIndexInformer
	NewLister func(cache.Indexer) cache.GenericLister
}

// Informer returns the shared informer.
func (g *GenericInformer) Informer() cache.SharedIndexInformer { return g.Shared }

// Lister lists and gets from the informer's cache.
func (g *GenericInformer) Lister() cache.GenericLister { return g.NewLister(g.Shared.GetIndexer()) }
