package crcache

import (
	"fmt"

	cache "github.com/openinformer/cache"
)

// informerNames reserves a metrics name for each informer of a cache:
// prefix/representation/resource/namespace,
// with "#2", "#3"... when another cache in the process holds the name.
type informerNames struct {
	prefix string
	on     bool // false: no metrics, nothing reserved
}

// maxNameSuffix bounds the search for a free name; past it the informer
// publishes no metrics rather than loop.
const maxNameSuffix = 100

// reserve returns the informer's name, nil when metrics are off or no
// name is free.
func (n *informerNames) reserve(s listWatchScope) *cache.InformerName {
	if !n.on {
		return nil
	}
	ns := s.namespace
	if ns == "" {
		ns = "*"
	}
	base := fmt.Sprintf("%s/%s/%s/%s", n.prefix, s.rep, s.mapping.Resource.GroupResource(), ns)
	for i := 1; i <= maxNameSuffix; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s#%d", base, i)
		}
		if r, err := cache.NewInformerName(name); err == nil {
			return r
		}
	}
	return nil
}
