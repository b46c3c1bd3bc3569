package cache

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/objmeta"
	internalstore "github.com/openinformer/cache/internal/store"
)

// ListAll passes every object of store matching selector to appendFn. An
// empty selector selects everything without reading labels; an object
// without metadata is an error otherwise. A store of ours matches labels
// before it reads objects, so a compact store decodes only what matches.
func ListAll(store Store, selector labels.Selector, appendFn AppendFunc) error {
	if labels.MatchesNothing(selector) {
		return nil
	}
	if s, ok := store.(internalstore.Selecting); ok && !selector.Empty() {
		objs, err := s.ListSelect(selector)
		appendAll(objs, appendFn)
		return err
	}
	return appendMatching(store.List(), "", selector, appendFn)
}

// appendAll passes each of objs to appendFn.
func appendAll(objs []interface{}, appendFn AppendFunc) {
	for _, obj := range objs {
		appendFn(obj)
	}
}

// appendMatching passes the objects in namespace ns (any, if "") whose
// labels match selector to appendFn.
func appendMatching(objs []interface{}, ns string, selector labels.Selector, appendFn AppendFunc) error {
	everything := ns == "" && selector.Empty()
	for _, obj := range objs {
		if everything {
			appendFn(obj)
			continue
		}
		m, err := objmeta.Listed(obj)
		if err != nil {
			return err
		}
		if (ns == "" || m.GetNamespace() == ns) && selector.Matches(labels.Set(m.GetLabels())) {
			appendFn(obj)
		}
	}
	return nil
}

// ListAllByNamespace passes the objects of namespace matching selector to
// appendFn, using the namespace index. Without that index it logs a warning
// and scans everything.
func ListAllByNamespace(indexer Indexer, namespace string, selector labels.Selector, appendFn AppendFunc) error {
	if labels.MatchesNothing(selector) {
		return nil
	}
	if namespace == metav1.NamespaceAll {
		return ListAll(indexer, selector, appendFn)
	}
	objs, err := namespaceMembers(indexer, namespace, selector)
	var lookup *internalstore.IndexLookupError
	if errors.As(err, &lookup) {
		klog.TODO().Info("Warning: can not retrieve list of objects using index", "err", lookup.Err)
		return appendMatching(indexer.List(), namespace, selector, appendFn)
	}
	appendAll(objs, appendFn)
	return err
}

// namespaceMembers returns the objects of namespace that selector
// matches, as the namespace index has them: matched by the store itself
// where it can, or read through Index (whose errors come as an
// *IndexLookupError) and matched here.
func namespaceMembers(indexer Indexer, namespace string, selector labels.Selector) ([]interface{}, error) {
	byNamespace := &metav1.ObjectMeta{Namespace: namespace}
	if s, ok := indexer.(internalstore.Selecting); ok {
		return s.IndexSelect(NamespaceIndex, byNamespace, selector)
	}
	objs, err := indexer.Index(NamespaceIndex, byNamespace)
	if err != nil {
		return nil, &internalstore.IndexLookupError{Err: err}
	}
	var matched []interface{}
	err = appendMatching(objs, "", selector, func(obj interface{}) { matched = append(matched, obj) })
	return matched, err
}

// NewGenericLister returns a GenericLister reading resource from indexer.
func NewGenericLister(indexer Indexer, resource schema.GroupResource) GenericLister {
	return &genericLister{indexer: indexer, resource: resource}
}

type genericLister struct {
	indexer  Indexer
	resource schema.GroupResource
}

// List returns the objects matching selector; nil when there are none.
func (l *genericLister) List(selector labels.Selector) ([]runtime.Object, error) {
	var c runtimeCollector
	return c.result(ListAll(l.indexer, selector, c.append))
}

// runtimeCollector gathers listed objects as runtime.Objects, remembering
// the first one that is not (client-go panics on it).
type runtimeCollector struct {
	objs []runtime.Object
	err  error
}

func (c *runtimeCollector) append(obj interface{}) {
	ro, err := asRuntimeObject(obj)
	if err != nil {
		if c.err == nil {
			c.err = err
		}
		return
	}
	c.objs = append(c.objs, ro)
}

func (c *runtimeCollector) result(err error) ([]runtime.Object, error) {
	if err != nil {
		return c.objs, err
	}
	return c.objs, c.err
}

func asRuntimeObject(obj interface{}) (runtime.Object, error) {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("stored object of type %T is not a runtime.Object", obj)
	}
	return ro, nil
}

// Get returns the object whose key is name.
func (l *genericLister) Get(name string) (runtime.Object, error) {
	return getRuntimeObject(l.indexer, l.resource, name, name)
}

// ByNamespace returns a lister of one namespace.
func (l *genericLister) ByNamespace(namespace string) GenericNamespaceLister {
	return &genericNamespaceLister{indexer: l.indexer, namespace: namespace, resource: l.resource}
}

type genericNamespaceLister struct {
	indexer   Indexer
	namespace string
	resource  schema.GroupResource
}

// List returns the namespace's objects matching selector; nil when none.
func (l *genericNamespaceLister) List(selector labels.Selector) ([]runtime.Object, error) {
	var c runtimeCollector
	return c.result(ListAllByNamespace(l.indexer, l.namespace, selector, c.append))
}

// Get returns the object named name in the namespace.
func (l *genericNamespaceLister) Get(name string) (runtime.Object, error) {
	return getRuntimeObject(l.indexer, l.resource, namespacedListerKey(l.namespace, name), name)
}

// getRuntimeObject looks key up; absence is a NotFound error for name.
func getRuntimeObject(indexer Indexer, resource schema.GroupResource, key, name string) (runtime.Object, error) {
	obj, exists, err := indexer.GetByKey(key)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(resource, name)
	}
	return asRuntimeObject(obj)
}
