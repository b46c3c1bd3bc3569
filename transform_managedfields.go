package cache

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TransformStripManagedFields returns a TransformFunc that drops
// metadata.managedFields from every object before it is cached; it has the
// name and shape of controller-runtime's pkg/cache function, so it fits
// controller-runtime's DefaultTransform and SharedIndexInformer.SetTransform
// alike.
//
// The trade-off: managedFields is the server-side-apply bookkeeping of which
// manager owns which field, and it is often the largest part of an object's
// metadata (31% of a typical pod's heap in a cache; see the README's
// "Memory" section). A controller that never reads it saves that memory;
// one that does (field-ownership checks, tooling that shows managers) must
// not use this. Writing back an object read from a stripped cache is safe:
// the API server keeps the stored managedFields when an update leaves them
// unset.
//
// The transform changes the object in place, as transforms do, and returns
// it. It is idempotent, handles typed objects, *unstructured.Unstructured
// and the objects inside DeletedFinalStateUnknown tombstones, leaves objects
// without metadata unchanged, never fails, and allocates nothing when there
// is nothing to strip.
func TransformStripManagedFields() TransformFunc {
	return stripManagedFields
}

func stripManagedFields(in any) (any, error) {
	if tombstone, ok := in.(DeletedFinalStateUnknown); ok {
		stripObjectManagedFields(tombstone.Obj)
		return in, nil
	}
	stripObjectManagedFields(in)
	return in, nil
}

func stripObjectManagedFields(obj any) {
	// Unstructured's accessor converts every entry to decide whether there
	// are any; looking at the map directly costs nothing and also removes
	// entries too malformed to convert.
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			delete(md, "managedFields")
		}
		return
	}
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
}

// cacheTransform is the informer's transform with managedFields stripped
// after it when the options ask for that.
func (s *sharedIndexInformer) cacheTransform() TransformFunc {
	if !s.stripFields {
		return s.transform
	}
	user := s.transform
	if user == nil {
		return stripManagedFields
	}
	return func(in any) (any, error) {
		out, err := user(in)
		if err != nil {
			return nil, err
		}
		return stripManagedFields(out)
	}
}
