package fake

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

func TestCreateSetsSystemFieldsAndReturnsCopies(t *testing.T) {
	s, clk := newFakeTestServer(t, Options{})
	in := fakeTestPod("ns", "a")
	out := mustCreate(t, s, in).(*corev1.Pod)

	assert.Empty(t, in.ResourceVersion, "the argument must not be modified")
	assert.Equal(t, "2", out.ResourceVersion)
	assert.NotEmpty(t, out.UID)
	assert.Equal(t, clk.Now(), out.CreationTimestamp.Time)
	assert.Equal(t, "2", s.ResourceVersion())

	out.Labels = map[string]string{"mutated": "yes"}
	got, err := s.Get("ns", "a")
	require.NoError(t, err)
	assert.Empty(t, got.(*corev1.Pod).Labels, "callers must not reach the server's state")
}

func TestCreateErrors(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a"))

	_, err := s.Create(fakeTestPod("ns", "a"))
	assert.True(t, apierrors.IsAlreadyExists(err), "got %v", err)

	withRV := fakeTestPod("ns", "b")
	withRV.ResourceVersion = "5"
	_, err = s.Create(withRV)
	assert.True(t, apierrors.IsBadRequest(err), "got %v", err)

	_, err = s.Create(fakeTestPod("", "c"))
	assert.True(t, apierrors.IsBadRequest(err), "namespaced resource without namespace: %v", err)

	_, err = s.Create(fakeTestPod("ns", ""))
	assert.True(t, apierrors.IsInvalid(err), "no name: %v", err)

	_, err = s.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}})
	assert.ErrorContains(t, err, "cannot store a *v1.ConfigMap")

	_, err = s.Create(nil)
	assert.ErrorContains(t, err, "object is nil")
	_, err = s.Create((*corev1.Pod)(nil))
	assert.ErrorContains(t, err, "object is nil")
}

func TestCreateGenerateName(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	p := fakeTestPod("ns", "")
	p.GenerateName = "web-"
	out := mustCreate(t, s, p).(*corev1.Pod)
	assert.Regexp(t, `^web-[bcdfghjklmnpqrstvwxz2456789]{5}$`, out.Name)
}

func TestNewRejectsUnknownKinds(t *testing.T) {
	_, err := New(Options{Object: &unknownTestObject{}})
	assert.ErrorContains(t, err, "unknown kind")

	_, err = New(Options{Object: &unstructured.Unstructured{}})
	assert.ErrorContains(t, err, "GroupVersionKind")

	_, err = New(Options{Object: &corev1.Pod{}, Objects: []runtime.Object{fakeTestPod("ns", "a"), fakeTestPod("ns", "a")}})
	assert.ErrorContains(t, err, "already exists")
}

// The zero Options name no type; the message says which field to set, not how unstructured
// objects are configured.
func TestMustNewNamesTheMissingObject(t *testing.T) {
	assert.PanicsWithError(t, errNoKind.Error(), func() { MustNew(Options{}) })
	assert.Contains(t, errNoKind.Error(), "Options.Object is nil")
}

// unknownTestObject is a runtime.Object no scheme knows.
type unknownTestObject struct{ metav1.ObjectMeta }

func (u *unknownTestObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (u *unknownTestObject) DeepCopyObject() runtime.Object {
	return &unknownTestObject{ObjectMeta: *u.ObjectMeta.DeepCopy()}
}

func TestClusterScopedClearsNamespace(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{Object: &corev1.Node{}, ClusterScoped: true})
	out := mustCreate(t, s, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Namespace: "ignored", Name: "n1"}})
	assert.Empty(t, out.(*corev1.Node).Namespace)
	_, err := s.Get("", "n1")
	require.NoError(t, err)
}

func TestUpdateSemantics(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	created := mustCreate(t, s, fakeTestPod("ns", "a")).(*corev1.Pod)

	_, err := s.Update(fakeTestPod("ns", "missing"))
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)

	changed := created.DeepCopy()
	changed.Labels = map[string]string{"v": "2"}
	updated, err := s.Update(changed)
	require.NoError(t, err)
	assert.Equal(t, "3", updated.(*corev1.Pod).ResourceVersion)
	assert.Equal(t, created.UID, updated.(*corev1.Pod).UID)

	// The old resourceVersion is a failed precondition (optimistic concurrency).
	stale := created.DeepCopy()
	stale.Labels = map[string]string{"v": "stale"}
	_, err = s.Update(stale)
	assert.True(t, apierrors.IsConflict(err), "got %v", err)

	// An empty resourceVersion is an unconditional update.
	unconditional := fakeTestPod("ns", "a", "v", "3")
	out, err := s.Update(unconditional)
	require.NoError(t, err)
	assert.Equal(t, "4", out.(*corev1.Pod).ResourceVersion)

	// etcd skips identical writes: no new RV, no event.
	same, err := s.Update(fakeTestPod("ns", "a", "v", "3"))
	require.NoError(t, err)
	assert.Equal(t, "4", same.(*corev1.Pod).ResourceVersion)
	assert.Equal(t, "4", s.ResourceVersion())
}

func TestDeleteReturnsFinalStateWithDeleteRV(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a"))
	out, err := s.Delete("ns", "a")
	require.NoError(t, err)
	assert.Equal(t, "3", out.(*corev1.Pod).ResourceVersion)
	_, err = s.Delete("ns", "a")
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
	_, err = s.Get("ns", "a")
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
}

func TestPatch(t *testing.T) {
	s, _ := newFakeTestServer(t, Options{})
	mustCreate(t, s, fakeTestPod("ns", "a", "keep", "1", "drop", "1"))

	out, err := s.Patch("ns", "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"drop":null,"new":"x"}}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"keep": "1", "new": "x"}, out.(*corev1.Pod).Labels)
	assert.Equal(t, "3", out.(*corev1.Pod).ResourceVersion)

	out, err = s.Patch("ns", "a", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"c","image":"busybox"}]}}`))
	require.NoError(t, err)
	assert.Equal(t, "busybox", out.(*corev1.Pod).Spec.Containers[0].Image)

	// A resourceVersion in the patch is a precondition.
	_, err = s.Patch("ns", "a", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"2","labels":{"x":"y"}}}`))
	assert.True(t, apierrors.IsConflict(err), "got %v", err)

	_, err = s.Patch("ns", "a", types.MergePatchType, []byte(`{"metadata":{"name":"b"}}`))
	assert.True(t, apierrors.IsBadRequest(err), "got %v", err)
	_, err = s.Patch("ns", "a", types.MergePatchType, []byte(`not json`))
	assert.True(t, apierrors.IsBadRequest(err), "got %v", err)
	out, err = s.Patch("ns", "a", types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/finalizers","value":["f"]}]`))
	require.NoError(t, err)
	assert.Equal(t, []string{"f"}, out.(*corev1.Pod).Finalizers)
	_, err = s.Patch("ns", "a", types.JSONPatchType, []byte(`[{"op":"test","path":"/metadata/name","value":"zzz"}]`))
	assert.True(t, apierrors.IsBadRequest(err), "failed test op: %v", err)
	_, err = s.Patch("ns", "a", types.ApplyYAMLPatchType, []byte(`{}`))
	assert.Equal(t, int32(415), apiStatusCode(err))
	_, err = s.Patch("ns", "missing", types.MergePatchType, []byte(`{}`))
	assert.True(t, apierrors.IsNotFound(err), "got %v", err)
}

func apiStatusCode(err error) int32 {
	if st, ok := err.(apierrors.APIStatus); ok {
		return st.Status().Code
	}
	return 0
}

func TestUnstructuredObjects(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	s, _ := newFakeTestServer(t, Options{GroupVersionKind: gvk})
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "ns", "name": "w1"},
		"spec":     map[string]any{"size": int64(1)},
	}}
	out := mustCreate(t, s, u).(*unstructured.Unstructured)
	assert.Equal(t, gvk, out.GroupVersionKind())

	_, err := s.Patch("ns", "w1", types.MergePatchType, []byte(`{"spec":{"size":9007199254740993}}`))
	require.NoError(t, err)
	got, err := s.Get("ns", "w1")
	require.NoError(t, err)
	size, _, _ := unstructured.NestedInt64(got.(*unstructured.Unstructured).Object, "spec", "size")
	assert.Equal(t, int64(9007199254740993), size, "large integers survive a merge patch")

	_, err = s.Patch("ns", "w1", types.StrategicMergePatchType, []byte(`{}`))
	assert.Equal(t, int32(415), apiStatusCode(err), "strategic merge patch is not supported for unstructured")

	list, err := s.List(metav1.ListOptions{})
	require.NoError(t, err)
	ul := list.(*unstructured.UnstructuredList)
	assert.Equal(t, "WidgetList", ul.GetKind())
	require.Len(t, ul.Items, 1)

	other := &unstructured.Unstructured{}
	other.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"})
	other.SetNamespace("ns")
	other.SetName("g")
	_, err = s.Create(other)
	assert.ErrorContains(t, err, "cannot store kind")
	_, err = s.Create(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}})
	assert.ErrorContains(t, err, "no metadata")

	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: list.(*unstructured.UnstructuredList).GetResourceVersion()})
	_, err = s.Delete("ns", "w1")
	require.NoError(t, err)
	ev := nextEvent(t, w)
	assert.Equal(t, watch.Deleted, ev.Type)
	assert.Equal(t, gvk, ev.Object.GetObjectKind().GroupVersionKind())
}

func TestInitialObjectsStartTheWindow(t *testing.T) {
	withRV := fakeTestPod("ns", "b")
	withRV.ResourceVersion = "77"
	s, _ := newFakeTestServer(t, Options{Objects: []runtime.Object{fakeTestPod("ns", "a"), withRV}})
	assert.Equal(t, "77", withRV.ResourceVersion, "the caller's object is not modified")
	assert.Equal(t, "3", s.ResourceVersion())
	assert.Len(t, s.Objects(), 2)
	// Like a watch cache just filled from storage: older RVs are outside the window.
	w := startWatch(t, s, metav1.ListOptions{ResourceVersion: "1"})
	ev := nextEvent(t, w)
	require.Equal(t, watch.Error, ev.Type)
	assert.Equal(t, int32(410), ev.Object.(*metav1.Status).Code)
}
