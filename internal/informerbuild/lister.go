package informerbuild

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	cache "github.com/openinformer/cache"
)

// ShimLister is the lister the dynamic and metadata factories hand out:
// what client-go's dynamiclister and metadatalister are behind their
// RuntimeObjectShim (lists never nil, a missing object NotFound under the
// resource), reading through this module's ListAll and ListAllByNamespace,
// so that a compact store matches a label selector before it decodes.
// Where client-go's panics on an object that is not a T, it returns an
// error naming the types.
type ShimLister[T runtime.Object] struct {
	indexer  cache.Indexer
	resource schema.GroupResource
	// namespace is "" for every namespace, and for cluster-scoped objects.
	namespace string
}

var _ cache.GenericLister = ShimLister[runtime.Object]{}

// NewShimLister returns the lister of resource's objects, of type T, in
// indexer.
func NewShimLister[T runtime.Object](indexer cache.Indexer, resource schema.GroupResource) ShimLister[T] {
	return ShimLister[T]{indexer: indexer, resource: resource}
}

// List returns the objects that selector matches.
func (l ShimLister[T]) List(selector labels.Selector) ([]runtime.Object, error) {
	var objs []T
	var wrong error
	collect := func(m any) {
		if obj, ok := m.(T); ok {
			objs = append(objs, obj)
		} else if wrong == nil {
			wrong = l.wrongType(m)
		}
	}
	var err error
	if l.namespace == "" {
		err = cache.ListAll(l.indexer, selector, collect)
	} else {
		err = cache.ListAllByNamespace(l.indexer, l.namespace, selector, collect)
	}
	if err == nil {
		err = wrong
	}
	if err != nil {
		return nil, err
	}
	ret := make([]runtime.Object, len(objs))
	for i, obj := range objs {
		ret[i] = obj
	}
	return ret, nil
}

// Get returns the object named name (in the lister's namespace, if any).
// With an error the object is a T's zero value (a typed nil pointer), as
// the shim passes on its lister's.
func (l ShimLister[T]) Get(name string) (runtime.Object, error) {
	obj, err := l.get(name)
	return obj, err
}

func (l ShimLister[T]) get(name string) (T, error) {
	var none T
	key := name
	if l.namespace != "" {
		key = l.namespace + "/" + name
	}
	obj, exists, err := l.indexer.GetByKey(key)
	if err != nil {
		return none, err
	}
	if !exists {
		return none, apierrors.NewNotFound(l.resource, name)
	}
	typed, ok := obj.(T)
	if !ok {
		return none, l.wrongType(obj)
	}
	return typed, nil
}

// ByNamespace returns the lister of namespace's objects.
func (l ShimLister[T]) ByNamespace(namespace string) cache.GenericNamespaceLister {
	l.namespace = namespace
	return l
}

func (l ShimLister[T]) wrongType(obj any) error {
	var want T
	return fmt.Errorf("the cache of %s holds a %T, not a %T", l.resource, obj, want)
}
