package cache_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
)

var strip = cache.TransformStripManagedFields()

func TestStripManagedFieldsTyped(t *testing.T) {
	pod := fixtures.Pods(1, 1)[0]
	want := pod.DeepCopy()
	want.ManagedFields = nil

	out, err := strip(pod)
	require.NoError(t, err)
	assert.Same(t, pod, out, "the object is changed in place and returned")
	assert.Equal(t, want, out, "only managedFields changes")

	again, err := strip(out)
	require.NoError(t, err)
	assert.Equal(t, want, again, "idempotent")
}

func TestStripManagedFieldsEmptyListBecomesNil(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: []metav1.ManagedFieldsEntry{}}}
	out, err := strip(pod)
	require.NoError(t, err)
	assert.Nil(t, out.(*corev1.Pod).ManagedFields)
}

func TestStripManagedFieldsUnstructured(t *testing.T) {
	cr := fixtures.CustomResources(1, 1)[0]
	require.NotEmpty(t, cr.GetManagedFields())
	want := cr.DeepCopy()
	unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")

	out, err := strip(cr)
	require.NoError(t, err)
	assert.Equal(t, want, out)
	_, found, _ := unstructured.NestedFieldNoCopy(cr.Object, "metadata", "managedFields")
	assert.False(t, found, "the key is gone, not set to null")

	malformed := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
		"name": "x", "managedFields": "not a list"}}}
	_, err = strip(malformed)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "x"}, malformed.Object["metadata"], "even entries the accessor cannot read")

	noMeta := &unstructured.Unstructured{Object: map[string]any{"kind": "Thing"}}
	out, err = strip(noMeta)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"kind": "Thing"}, out.(*unstructured.Unstructured).Object)
}

func TestStripManagedFieldsTombstone(t *testing.T) {
	pod := fixtures.Pods(1, 1)[0]
	cr := fixtures.CustomResources(1, 1)[0]
	for _, obj := range []runtime.Object{pod, cr} {
		in := cache.DeletedFinalStateUnknown{Key: "k", Obj: obj}
		out, err := strip(in)
		require.NoError(t, err)
		require.Equal(t, in, out, "the tombstone keeps its key and object")
		m, err := meta.Accessor(out.(cache.DeletedFinalStateUnknown).Obj)
		require.NoError(t, err)
		assert.Empty(t, m.GetManagedFields())
	}
}

func TestStripManagedFieldsLeavesOtherValues(t *testing.T) {
	for _, in := range []any{nil, "a string", 42, cache.DeletedFinalStateUnknown{Key: "k"}} {
		out, err := strip(in)
		require.NoError(t, err)
		assert.Equal(t, in, out)
	}
}

func TestStripManagedFieldsAllocatesNothingWhenNothingToStrip(t *testing.T) {
	pod := fixtures.Pods(1, 1)[0]
	pod.ManagedFields = nil
	cr := fixtures.CustomResources(1, 1)[0]
	unstructured.RemoveNestedField(cr.Object, "metadata", "managedFields")
	for name, obj := range map[string]any{
		"typed":        pod,
		"unstructured": cr,
		"tombstone":    any(cache.DeletedFinalStateUnknown{Key: "k", Obj: pod}),
	} {
		allocs := testing.AllocsPerRun(100, func() { _, _ = strip(obj) })
		assert.Zero(t, allocs, name)
	}
}

// A user's own transform and the strip compose in either order, in a store
// and in an informer.
func TestStripManagedFieldsComposesWithUserTransform(t *testing.T) {
	label := func(in any) (any, error) {
		if p, ok := in.(*corev1.Pod); ok {
			p.Labels = map[string]string{"seen": "yes"}
		}
		return in, nil
	}
	chain := func(first, second cache.TransformFunc) cache.TransformFunc {
		return func(in any) (any, error) {
			mid, err := first(in)
			if err != nil {
				return nil, err
			}
			return second(mid)
		}
	}
	for name, tf := range map[string]cache.TransformFunc{"user then strip": chain(label, strip), "strip then user": chain(strip, label)} {
		store := cache.NewStore(cache.MetaNamespaceKeyFunc, cache.WithTransformer(tf))
		pod := fixtures.Pods(1, 1)[0]
		require.NoError(t, store.Add(pod))
		got, ok, err := store.GetByKey(pod.Namespace + "/" + pod.Name)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Nil(t, got.(*corev1.Pod).ManagedFields, name)
		assert.Equal(t, map[string]string{"seen": "yes"}, got.(*corev1.Pod).Labels, name)
	}
}

func TestStripManagedFieldsInAnInformer(t *testing.T) {
	defer goleak.VerifyNone(t)
	pods := fixtures.Pods(2, 20)
	server := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: fixtures.Objects(pods)})
	informer := cache.NewSharedIndexInformer(server, &corev1.Pod{}, 0, cache.Indexers{})
	require.NoError(t, informer.SetTransform(cache.TransformStripManagedFields()))

	defer runUntilSynced(t, informer)()

	list := informer.GetStore().List()
	require.Len(t, list, len(pods))
	for _, obj := range list {
		p := obj.(*corev1.Pod)
		assert.Nil(t, p.ManagedFields)
		assert.NotEmpty(t, p.Status.ContainerStatuses, "everything else is kept")
	}
}

// runUntilSynced runs informer until it has synced and returns what stops
// it and waits for it to return.
func runUntilSynced(t *testing.T, informer cache.SharedIndexInformer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	stop = func() { cancel(); <-done }
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		stop()
		t.Fatal("informer did not sync")
	}
	return stop
}

// The option strips after the user's transform, which still sees the
// fields.
func TestStripManagedFieldsOptionRunsAfterTheTransform(t *testing.T) {
	defer goleak.VerifyNone(t)
	pods := fixtures.Pods(2, 20)
	server := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: fixtures.Objects(pods)})
	informer := cache.NewSharedIndexInformerWithOptions(server, &corev1.Pod{}, cache.SharedIndexInformerOptions{StripManagedFields: true})
	var sawFields atomic.Int32
	require.NoError(t, informer.SetTransform(func(in any) (any, error) {
		if p, ok := in.(*corev1.Pod); ok && len(p.ManagedFields) > 0 {
			sawFields.Add(1)
		}
		return in, nil
	}))

	defer runUntilSynced(t, informer)()

	list := informer.GetStore().List()
	require.Len(t, list, len(pods))
	for _, obj := range list {
		assert.Nil(t, obj.(*corev1.Pod).ManagedFields)
	}
	assert.GreaterOrEqual(t, int(sawFields.Load()), len(pods), "the user's transform ran first")
}

// Dropping managedFields from an informer's cache, for a controller that
// never reads them.
func ExampleTransformStripManagedFields() {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	server := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: []runtime.Object{pod}})
	informer := cache.NewSharedIndexInformer(server, &corev1.Pod{}, 0, cache.Indexers{})
	_ = informer.SetTransform(cache.TransformStripManagedFields())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	cache.WaitFor(ctx, "", informer.HasSyncedChecker()) // wakes on sync, where WaitForCacheSync polls every 100ms

	cached, _, _ := informer.GetStore().GetByKey("shop/web")
	fmt.Println(len(cached.(*corev1.Pod).ManagedFields))
	cancel()
	<-done
	// Output: 0
}
