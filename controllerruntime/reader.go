package crcache

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	cache "github.com/openinformer/cache"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reader answers Get and List from one informer's indexer with
// controller-runtime's semantics: copies unless deep copies are disabled,
// NotFound errors naming the kind, field selectors through IndexField's
// indexes only.
type reader struct {
	indexer         cache.Indexer
	gvk             schema.GroupVersionKind
	clusterScoped   bool
	disableDeepCopy bool
	// fresh is true when every object the indexer returns is decoded for
	// this read alone (compact storage without a hot cache): a copy of it
	// would only cost a second allocation.
	fresh bool
}

func newReader(indexer cache.Indexer, gvk schema.GroupVersionKind, scope apimeta.RESTScopeName, disableDeepCopy, fresh bool) *reader {
	return &reader{indexer: indexer, gvk: gvk, clusterScoped: scope == apimeta.RESTScopeNameRoot, disableDeepCopy: disableDeepCopy, fresh: fresh}
}

// freshReads reports whether an informer with these options returns a
// freshly decoded object on every read.
func freshReads(o InformerOptions) bool {
	return o.Compact != nil && o.Compact.HotObjects <= 0
}

// copyOut returns obj as the caller may keep it: obj itself when copies
// are off or it is fresh, else a deep copy; copied reports whether the
// caller owns it.
func (r *reader) copyOut(obj runtime.Object, unsafe *bool) (out runtime.Object, copied bool) {
	if r.disableDeepCopy || (unsafe != nil && *unsafe) {
		return obj, false
	}
	if r.fresh {
		return obj, true
	}
	return obj.DeepCopyObject(), true
}

// Get implements client.Reader.
func (r *reader) Get(_ context.Context, key client.ObjectKey, out client.Object, opts ...client.GetOption) error {
	getOpts := client.GetOptions{}
	getOpts.ApplyOptions(opts)
	if r.clusterScoped {
		key.Namespace = ""
	}
	item, exists, err := r.indexer.GetByKey(storeKey(key.Namespace, key.Name))
	if err != nil {
		return err
	}
	if !exists {
		return apierrors.NewNotFound(schema.GroupResource{Group: r.gvk.Group, Resource: r.gvk.Kind}, key.Name)
	}
	obj, ok := item.(runtime.Object)
	if !ok {
		return fmt.Errorf("cache contained %T, which is not an Object", item)
	}
	obj, copied := r.copyOut(obj, getOpts.UnsafeDisableDeepCopy)
	outVal, objVal := reflect.ValueOf(out), reflect.ValueOf(obj)
	if !objVal.Type().AssignableTo(outVal.Type()) {
		return fmt.Errorf("cache had type %s, but %s was asked for", objVal.Type(), outVal.Type())
	}
	reflect.Indirect(outVal).Set(reflect.Indirect(objVal))
	if copied {
		out.GetObjectKind().SetGroupVersionKind(r.gvk)
	}
	return nil
}

// List implements client.Reader.
func (r *reader) List(_ context.Context, out client.ObjectList, opts ...client.ListOption) error {
	listOpts := client.ListOptions{}
	listOpts.ApplyOptions(opts)
	if listOpts.Continue != "" {
		return fmt.Errorf("continue list option is not supported by the cache")
	}
	items, err := r.candidates(&listOpts)
	if err != nil {
		return err
	}
	objs := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		if listOpts.Limit > 0 && int64(len(objs)) >= listOpts.Limit {
			break
		}
		obj, ok := item.(runtime.Object)
		if !ok {
			return fmt.Errorf("cache contained %T, which is not an Object", item)
		}
		m, err := apimeta.Accessor(obj)
		if err != nil {
			return err
		}
		if listOpts.LabelSelector != nil && !listOpts.LabelSelector.Matches(labels.Set(m.GetLabels())) {
			continue
		}
		obj, copied := r.copyOut(obj, listOpts.UnsafeDisableDeepCopy)
		if copied {
			obj.GetObjectKind().SetGroupVersionKind(r.gvk)
		}
		objs = append(objs, obj)
	}
	if err := apimeta.SetList(out, objs); err != nil {
		return err
	}
	out.SetContinue("continue-not-supported")
	return nil
}

// candidates are the objects a List must look at: the field indexes'
// when a field selector is given, else the label index's when the label
// selector pins a label to one value and the informer keeps one, else
// the namespace's or all.
func (r *reader) candidates(o *client.ListOptions) ([]any, error) {
	switch {
	case o.FieldSelector != nil:
		if !exactFieldMatch(o.FieldSelector) {
			return nil, fmt.Errorf("non-exact field matches are not supported by the cache")
		}
		return r.byFieldIndexes(o.FieldSelector.Requirements(), o.Namespace)
	case o.LabelSelector != nil:
		if keys, ok := r.labelIndexKeys(o.LabelSelector, o.Namespace); ok {
			return r.byKeys(keys)
		}
	}
	if o.Namespace != "" {
		return r.indexer.ByIndex(cache.NamespaceIndex, o.Namespace)
	}
	return r.indexer.List(), nil
}

// exactFieldMatch reports whether every requirement of sel is an
// equality, the only kind the field indexes answer.
func exactFieldMatch(sel fields.Selector) bool {
	reqs := sel.Requirements()
	if len(reqs) == 0 {
		return false
	}
	for _, req := range reqs {
		if req.Operator != selection.Equals && req.Operator != selection.DoubleEquals {
			return false
		}
	}
	return true
}

// byFieldIndexes answers a field selector from IndexField's indexes: the
// first requirement's index gives the candidates, the others filter them.
func (r *reader) byFieldIndexes(reqs fields.Requirements, namespace string) ([]any, error) {
	var objs []any
	indexers := r.indexer.GetIndexers()
	for i, req := range reqs {
		name, value := fieldIndexName(req.Field), namespacedIndexValue(namespace, req.Value)
		if i == 0 {
			var err error
			if objs, err = r.indexer.ByIndex(name, value); err != nil || len(objs) == 0 {
				return nil, err
			}
			continue
		}
		fn, ok := indexers[name]
		if !ok {
			return nil, fmt.Errorf("index with name %s does not exist", name)
		}
		kept := make([]any, 0, len(objs))
		for _, obj := range objs {
			vals, err := fn(obj)
			if err != nil {
				return nil, err
			}
			if slices.Contains(vals, value) {
				kept = append(kept, obj)
			}
		}
		if len(kept) == 0 {
			return nil, nil
		}
		objs = kept
	}
	return objs, nil
}

// labelIndex indexes compact informers by "key=value" of every label, so
// that a label selector is matched before any object is decoded.
const labelIndex = "crcache:labels"

func labelIndexFunc(obj any) ([]string, error) {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	vals := make([]string, 0, len(m.GetLabels()))
	for k, v := range m.GetLabels() {
		vals = append(vals, k+"="+v)
	}
	return vals, nil
}

// labelIndexKeys returns the keys of the objects that can match sel in
// namespace, from the label index, using the requirement with the fewest
// keys; ok is false when the informer has no label index or sel pins no
// label to a single value. The caller still matches sel in full.
func (r *reader) labelIndexKeys(sel labels.Selector, namespace string) (keys []string, ok bool) {
	if _, has := r.indexer.GetIndexers()[labelIndex]; !has {
		return nil, false
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil, false
	}
	for _, req := range reqs {
		op := req.Operator()
		if (op != selection.Equals && op != selection.DoubleEquals && op != selection.In) || req.Values().Len() != 1 {
			continue
		}
		k, err := r.indexer.IndexKeys(labelIndex, req.Key()+"="+req.Values().List()[0])
		if err != nil {
			return nil, false
		}
		if !ok || len(k) < len(keys) {
			keys, ok = k, true
		}
	}
	if ok && namespace != "" {
		prefix := namespace + "/"
		keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !strings.HasPrefix(k, prefix) })
	}
	return keys, ok
}

// byKeys reads the objects of keys, skipping any deleted meanwhile.
func (r *reader) byKeys(keys []string) ([]any, error) {
	objs := make([]any, 0, len(keys))
	for _, k := range keys {
		obj, exists, err := r.indexer.GetByKey(k)
		if err != nil {
			return nil, err
		}
		if exists {
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

// storeKey is the cache key of namespace/name, as MetaNamespaceKeyFunc
// makes it.
func storeKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// fieldIndexName is the name controller-runtime gives the index of a
// field registered with IndexField.
func fieldIndexName(field string) string { return "field:" + field }

// namespacedIndexValue is a field index value qualified by namespace, or
// by controller-runtime's all-namespaces marker.
func namespacedIndexValue(namespace, value string) string {
	if namespace == "" {
		namespace = "__all_namespaces"
	}
	return namespace + "/" + value
}
