package fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// Create stores a new object and returns it as stored: with a resourceVersion, a UID, a
// creation timestamp and, when only metadata.generateName is set, a generated name. The
// argument is not modified. Creating an existing object fails with AlreadyExists; setting
// metadata.resourceVersion fails with BadRequest, as on a real server.
func (s *Server) Create(obj runtime.Object) (runtime.Object, error) {
	obj, m, err := s.admit(obj)
	if err != nil {
		return nil, err
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.prepareCreateLocked(m); err != nil {
		return nil, err
	}
	key := objectKey(m)
	if _, exists := s.objects[key]; exists {
		return nil, apierrors.NewAlreadyExists(s.kind.resource, m.GetName())
	}
	s.rv++
	m.SetResourceVersion(formatRV(s.rv))
	s.objects[key] = obj
	s.appendEventLocked(event{rv: s.rv, key: key, typ: watch.Added, obj: obj})
	return obj.DeepCopyObject(), nil
}

// Update replaces a stored object. A non-empty metadata.resourceVersion is a precondition
// (409 Conflict when stale); an empty one updates unconditionally. An update that changes nothing
// keeps the resourceVersion and sends no event, because etcd skips identical writes.
func (s *Server) Update(obj runtime.Object) (runtime.Object, error) {
	obj, m, err := s.admit(obj)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.normalizeNamespace(m)
	key := objectKey(m)
	old, ok := s.objects[key]
	if !ok {
		return nil, apierrors.NewNotFound(s.kind.resource, m.GetName())
	}
	if s.opts.StatusSubresource {
		if obj, err = s.withStatusOf(obj, old); err != nil {
			return nil, err
		}
	}
	return s.updateLocked(key, old, obj)
}

// Get returns a copy of one stored object, or NotFound.
func (s *Server) Get(namespace, name string) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objects[s.key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(s.kind.resource, name)
	}
	return obj.DeepCopyObject(), nil
}

// Delete removes an object and returns its final state, carrying the deletion's
// resourceVersion as watchers see it in the DELETED event. A missing object is NotFound.
func (s *Server) Delete(namespace, name string) (runtime.Object, error) {
	return s.deleteIf(namespace, name, nil)
}

// deleteIf is Delete with DeleteOptions' preconditions: a UID or resourceVersion that does not
// match the stored object's is a 409 Conflict, as on the API server.
func (s *Server) deleteIf(namespace, name string, pre *metav1.Preconditions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.key(namespace, name)
	old, ok := s.objects[key]
	if !ok {
		return nil, apierrors.NewNotFound(s.kind.resource, name)
	}
	if err := s.checkPreconditions(old, pre); err != nil {
		return nil, err
	}
	s.rv++
	final := old.DeepCopyObject()
	metaOf(final).SetResourceVersion(formatRV(s.rv))
	delete(s.objects, key)
	s.appendEventLocked(event{rv: s.rv, key: key, typ: watch.Deleted, obj: final, prev: old})
	return final.DeepCopyObject(), nil
}

// Patch applies a JSON merge patch, a JSON patch or, for typed objects, a strategic merge patch
// to a stored object and stores the result like Update (a resourceVersion in the
// patch is a precondition).
func (s *Server) Patch(namespace, name string, pt types.PatchType, data []byte) (runtime.Object, error) {
	return s.patch(namespace, name, pt, data, false)
}

// patch applies a patch to the whole object, or to its status only when status is set.
func (s *Server) patch(namespace, name string, pt types.PatchType, data []byte, status bool) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.key(namespace, name)
	old, ok := s.objects[key]
	if !ok || (status && !s.opts.StatusSubresource) {
		return nil, apierrors.NewNotFound(s.kind.resource, name)
	}
	patched, err := s.applyPatch(old, pt, data)
	if err != nil {
		return nil, err
	}
	m := metaOf(patched)
	if m.GetName() != name || objectKey(m) != key {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name or namespace of the patched object (%s) does not match the request (%s)", objectKey(m), key))
	}
	if status {
		patched, err = s.statusUpdate(old, patched)
	} else if s.opts.StatusSubresource {
		patched, err = s.withStatusOf(patched, old)
	}
	if err != nil {
		return nil, err
	}
	return s.updateLocked(key, old, patched)
}

func (s *Server) applyPatch(old runtime.Object, pt types.PatchType, data []byte) (runtime.Object, error) {
	original, err := json.Marshal(old)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var result []byte
	switch {
	case pt == types.MergePatchType:
		result, err = mergePatch(original, data)
	case pt == types.JSONPatchType:
		result, err = applyJSONPatch(original, data)
	case pt == types.StrategicMergePatchType && !s.kind.unstructured:
		result, err = strategicpatch.StrategicMergePatch(original, data, s.kind.newObj())
	default:
		return nil, apierrors.NewGenericServerResponse(415, "patch", s.kind.resource, "", fmt.Sprintf("patch type %q is not supported by the fake for %v", pt, s.kind.gvk), 0, false)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid patch: %v", err))
	}
	out := s.kind.newObj()
	if err := json.Unmarshal(result, out); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patched object does not decode: %v", err))
	}
	if !s.kind.unstructured {
		out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	return out, nil
}

// applyJSONPatch applies an RFC 6902 JSON patch with the library the API server uses.
func applyJSONPatch(doc, patch []byte) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	return p.Apply(doc)
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(doc, patch []byte) ([]byte, error) {
	target, err := decodeJSONValue(doc)
	if err != nil {
		return nil, err
	}
	p, err := decodeJSONValue(patch)
	if err != nil {
		return nil, err
	}
	if _, ok := p.(map[string]any); !ok {
		return nil, fmt.Errorf("a merge patch for an object must be a JSON object")
	}
	return json.Marshal(mergeValue(target, p))
}

func decodeJSONValue(data []byte) (any, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber() // keep int64 resourceVersions and quantities exact
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func mergeValue(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergeValue(tm[k], v)
	}
	return tm
}

// updateLocked stores obj in place of old with update semantics; system fields come from old.
func (s *Server) updateLocked(key string, old, obj runtime.Object) (runtime.Object, error) {
	om, m := metaOf(old), metaOf(obj)
	if rv := m.GetResourceVersion(); rv != "" && rv != om.GetResourceVersion() {
		return nil, apierrors.NewConflict(s.kind.resource, m.GetName(),
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if uid := m.GetUID(); uid != "" && uid != om.GetUID() {
		return nil, apierrors.NewConflict(s.kind.resource, m.GetName(),
			fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", uid, om.GetUID()))
	}
	m.SetUID(om.GetUID())
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	m.SetResourceVersion(om.GetResourceVersion())
	if apiequality.Semantic.DeepEqual(old, obj) {
		return old.DeepCopyObject(), nil
	}
	s.rv++
	m.SetResourceVersion(formatRV(s.rv))
	s.objects[key] = obj
	s.appendEventLocked(event{rv: s.rv, key: key, typ: watch.Modified, obj: obj, prev: old})
	return obj.DeepCopyObject(), nil
}

// admit checks that obj is of the served kind and has metadata, and returns a private copy.
// Typed objects are stored without TypeMeta, as a typed clientset decodes them.
func (s *Server) admit(obj runtime.Object) (runtime.Object, metav1.Object, error) {
	if obj == nil || (reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil()) {
		return nil, nil, apierrors.NewBadRequest("fake: object is nil")
	}
	if reflect.TypeOf(obj) != s.kind.goType {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("fake: server for %v cannot store a %T", s.kind.gvk, obj))
	}
	obj = obj.DeepCopyObject()
	gvk := obj.GetObjectKind().GroupVersionKind()
	if !gvk.Empty() && gvk != s.kind.gvk {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("fake: server for %v cannot store kind %v", s.kind.gvk, gvk))
	}
	if s.kind.unstructured {
		obj.GetObjectKind().SetGroupVersionKind(s.kind.gvk)
		if _, ok := obj.(*unstructured.Unstructured).Object["metadata"].(map[string]any); !ok {
			return nil, nil, apierrors.NewBadRequest("fake: unstructured object has no metadata")
		}
	} else {
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("fake: %T has no object metadata", obj))
	}
	return obj, m, nil
}

// prepareCreateLocked fills the fields a real server sets on create.
func (s *Server) prepareCreateLocked(m metav1.Object) error {
	s.normalizeNamespace(m)
	if !s.opts.ClusterScoped && m.GetNamespace() == "" {
		return apierrors.NewBadRequest("fake: namespace is required for a namespaced resource")
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + randomSuffix())
	}
	if m.GetName() == "" {
		return apierrors.NewInvalid(schema.GroupKind{Group: s.kind.gvk.Group, Kind: s.kind.gvk.Kind}, "",
			field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	s.uidSeq++
	m.SetUID(uidFor(s.uidSeq))
	// Timestamps travel with second precision, so a stored object compares equal to a decoded one.
	m.SetCreationTimestamp(metav1.NewTime(s.clock.Now().Truncate(1e9)))
	return nil
}

// normalizeNamespace clears the namespace of cluster-scoped objects, as the API server does.
func (s *Server) normalizeNamespace(m metav1.Object) {
	if s.opts.ClusterScoped {
		m.SetNamespace("")
	}
}

func (s *Server) key(namespace, name string) string {
	if s.opts.ClusterScoped || namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// randomSuffix mimics the API server's generateName suffix: five characters without vowels.
func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}
