package informers

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	cache "github.com/openinformer/cache"
)

// typedLister is what the generated listers (zz_generated.go) list with:
// client-go's generated listers' List, read through this module's ListAll
// and ListAllByNamespace instead of client-go's, so that a compact store
// matches the selector before it decodes. Get and the listers' expansion
// methods (GetPodReplicaSets and the like) stay client-go's, on our
// indexer.
type typedLister[T runtime.Object] struct {
	indexer  cache.Indexer
	resource schema.GroupResource
	// namespace is "" for every namespace.
	namespace string
}

func newTypedLister[T runtime.Object](indexer cache.Indexer, resource schema.GroupResource) typedLister[T] {
	return typedLister[T]{indexer: indexer, resource: resource}
}

// in is the lister of namespace's objects.
func (l typedLister[T]) in(namespace string) typedLister[T] {
	l.namespace = namespace
	return l
}

// List returns the objects selector matches, nil for none, as client-go's
// listers do. Where they panic on an object that is not a T, it returns an
// error naming the types.
func (l typedLister[T]) List(selector labels.Selector) ([]T, error) {
	var ret []T
	var wrong any
	collect := func(m any) {
		if obj, ok := m.(T); ok {
			ret = append(ret, obj)
		} else if wrong == nil {
			wrong = m
		}
	}
	var err error
	if l.namespace == "" {
		err = cache.ListAll(l.indexer, selector, collect)
	} else {
		err = cache.ListAllByNamespace(l.indexer, l.namespace, selector, collect)
	}
	if err == nil && wrong != nil {
		var want T
		err = fmt.Errorf("the cache of %s holds a %T, not a %T", l.resource, wrong, want)
	}
	return ret, err
}
