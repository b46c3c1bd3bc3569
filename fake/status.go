package fake

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// UpdateStatus replaces the status of a stored object, like a PUT to its status subresource:
// everything but the status comes from the stored object, and a non-empty resourceVersion is a
// precondition as for Update. It is NotFound unless Options.StatusSubresource is set.
func (s *Server) UpdateStatus(obj runtime.Object) (runtime.Object, error) {
	obj, m, err := s.admit(obj)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.normalizeNamespace(m)
	key := objectKey(m)
	old, ok := s.objects[key]
	if !ok || !s.opts.StatusSubresource {
		return nil, apierrors.NewNotFound(s.kind.resource, m.GetName())
	}
	updated, err := s.statusUpdate(old, obj)
	if err != nil {
		return nil, err
	}
	return s.updateLocked(key, old, updated)
}

// PatchStatus patches the status of a stored object, like a PATCH to its status subresource:
// changes the patch makes outside the status are dropped. It is NotFound unless
// Options.StatusSubresource is set.
func (s *Server) PatchStatus(namespace, name string, pt types.PatchType, data []byte) (runtime.Object, error) {
	return s.patch(namespace, name, pt, data, true)
}

// statusUpdate is the stored object old with the status of obj, carrying obj's resourceVersion
// and UID so that they still act as preconditions.
func (s *Server) statusUpdate(old, obj runtime.Object) (runtime.Object, error) {
	out, err := s.withStatusOf(old, obj)
	if err != nil {
		return nil, err
	}
	m, from := metaOf(out), metaOf(obj)
	m.SetResourceVersion(from.GetResourceVersion())
	m.SetUID(from.GetUID())
	return out, nil
}

// withStatusOf returns a copy of dst whose status is src's (none when src has none). It works
// on the objects' JSON form, so that any kind, typed or unstructured, has its "status" field.
func (s *Server) withStatusOf(dst, src runtime.Object) (runtime.Object, error) {
	conv := runtime.DefaultUnstructuredConverter
	d, err := conv.ToUnstructured(dst)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("fake: reading %T: %w", dst, err))
	}
	from, err := conv.ToUnstructured(src)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("fake: reading %T: %w", src, err))
	}
	if status, ok := from["status"]; ok {
		d["status"] = status
	} else {
		delete(d, "status")
	}
	out := s.kind.newObj()
	if err := conv.FromUnstructured(d, out); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("fake: writing %T: %w", out, err))
	}
	if !s.kind.unstructured {
		out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	return out, nil
}

// checkPreconditions is the API server's check of DeleteOptions.Preconditions.
func (s *Server) checkPreconditions(obj runtime.Object, pre *metav1.Preconditions) error {
	if pre == nil {
		return nil
	}
	m := metaOf(obj)
	if pre.UID != nil && *pre.UID != m.GetUID() {
		return apierrors.NewConflict(s.kind.resource, m.GetName(),
			fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, m.GetUID()))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(s.kind.resource, m.GetName(),
			fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}
