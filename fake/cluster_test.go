package fake_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	oicache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/informers"
)

// clusterTestWorld serves pods (with a status subresource) and config maps.
func clusterTestWorld(t *testing.T, objects ...runtime.Object) (*fake.Cluster, *fake.Server, *fake.Server) {
	t.Helper()
	var pods, cms []runtime.Object
	for _, o := range objects {
		if _, ok := o.(*corev1.Pod); ok {
			pods = append(pods, o)
		} else {
			cms = append(cms, o)
		}
	}
	podServer := fake.MustNew(fake.Options{Object: &corev1.Pod{}, StatusSubresource: true, Objects: pods})
	cmServer := fake.MustNew(fake.Options{Object: &corev1.ConfigMap{}, Objects: cms})
	return fake.MustNewCluster(podServer, cmServer), podServer, cmServer
}

func clusterTestCM(name string, data ...string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string]string{}}
	for i := 0; i+1 < len(data); i += 2 {
		cm.Data[data[i]] = data[i+1]
	}
	return cm
}

// Writes through client-go's clientset reach the Server with the API server's answers:
// resourceVersions, AlreadyExists, NotFound, Conflict on a stale update and on a failed delete
// precondition, every patch type, delete collection.
func TestClusterClientsetWrites(t *testing.T) {
	cluster, _, cmServer := clusterTestWorld(t)
	cms := cluster.Clientset().CoreV1().ConfigMaps("ns")
	ctx := t.Context()

	created, err := cms.Create(ctx, clusterTestCM("a", "k", "v"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2", created.ResourceVersion)
	assert.NotEmpty(t, created.UID)
	_, err = cms.Create(ctx, clusterTestCM("a"), metav1.CreateOptions{})
	assert.True(t, apierrors.IsAlreadyExists(err), "%v", err)
	_, err = cms.Get(ctx, "missing", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	created.Data["k"] = "v2"
	updated, err := cms.Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "3", updated.ResourceVersion)
	_, err = cms.Update(ctx, created, metav1.UpdateOptions{}) // created still carries RV 2
	assert.True(t, apierrors.IsConflict(err), "%v", err)

	for pt, patch := range map[types.PatchType]string{
		types.MergePatchType:          `{"data":{"merge":"1"}}`,
		types.StrategicMergePatchType: `{"data":{"strategic":"1"}}`,
		types.JSONPatchType:           `[{"op":"add","path":"/data/json","value":"1"}]`,
	} {
		_, err := cms.Patch(ctx, "a", pt, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err, pt)
	}
	_, err = cms.Patch(ctx, "a", types.ApplyPatchType, []byte(`{}`), metav1.PatchOptions{})
	assert.True(t, apierrors.IsUnsupportedMediaType(err), "%v", err)
	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k": "v2", "merge": "1", "strategic": "1", "json": "1"}, got.Data)

	stale := "2"
	err = cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}})
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	require.NoError(t, cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &got.UID}}))
	err = cms.Delete(ctx, "a", metav1.DeleteOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	for _, name := range []string{"x", "y"} {
		_, err := cms.Create(ctx, clusterTestCM(name), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	assert.Empty(t, cmServer.Objects())
	assert.Equal(t, 1, cluster.CountCalls("deletecollection", "configmaps"))
	assert.Equal(t, 3, cluster.CountCalls("delete", "configmaps"))
}

// With Options.StatusSubresource, UpdateStatus changes only the status and Update only the rest,
// as on the API server; the subresource is NotFound on a Server without it.
func TestClusterStatusSubresource(t *testing.T) {
	cluster, podServer, _ := clusterTestWorld(t)
	client := cluster.Clientset()
	pods := client.CoreV1().Pods("ns")
	ctx := t.Context()
	p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}, metav1.CreateOptions{})
	require.NoError(t, err)

	p.Status.Phase = corev1.PodRunning
	p.Spec.NodeName = "ignored"
	p, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)
	assert.Empty(t, p.Spec.NodeName, "a status update must not change the spec")

	p.Status.Phase = corev1.PodFailed
	p.Labels = map[string]string{"a": "b"}
	p, err = pods.Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase, "an update must not change the status")
	assert.Equal(t, "b", p.Labels["a"])

	_, err = pods.Patch(ctx, "p", types.MergePatchType, []byte(`{"status":{"phase":"Succeeded"},"metadata":{"labels":{"a":"c"}}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	stored, err := podServer.Get("ns", "p")
	require.NoError(t, err)
	assert.Equal(t, corev1.PodSucceeded, stored.(*corev1.Pod).Status.Phase)
	assert.Equal(t, "b", stored.(*corev1.Pod).Labels["a"])

	_, err = client.CoreV1().ConfigMaps("ns").Create(ctx, clusterTestCM("c"), metav1.CreateOptions{})
	require.NoError(t, err)
	err = client.CoreV1().RESTClient().Put().Namespace("ns").Resource("configmaps").Name("c").SubResource("status").
		Body(clusterTestCM("c")).Do(ctx).Error()
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// Requests for what is not served, or out of scope, are 404 as on an API server.
func TestClusterRoutes(t *testing.T) {
	cluster, _, _ := clusterTestWorld(t)
	client := cluster.Clientset()
	ctx := t.Context()
	_, err := client.CoreV1().Secrets("ns").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = client.CoreV1().ConfigMaps("").Get(ctx, "a", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = client.CoreV1().ConfigMaps("other").Create(ctx, clusterTestCM("a"), metav1.CreateOptions{})
	assert.True(t, apierrors.IsBadRequest(err), "namespace of the body differs from the URL's: %v", err)
	list, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "a namespaced resource lists across namespaces")
	assert.Empty(t, list.Items)
}

// Reads keep the Server's semantics over HTTP: paging with continue tokens, 410 for a
// compacted resourceVersion as an ERROR event, and the events of a watch.
func TestClusterReadsOverHTTP(t *testing.T) {
	cluster, _, cmServer := clusterTestWorld(t, clusterTestCM("a"), clusterTestCM("b"), clusterTestCM("c"))
	cms := cluster.Clientset().CoreV1().ConfigMaps("ns")
	ctx := t.Context()

	page, err := cms.List(ctx, metav1.ListOptions{Limit: 2})
	require.NoError(t, err)
	assert.Len(t, page.Items, 2)
	require.NotEmpty(t, page.Continue)
	rest, err := cms.List(ctx, metav1.ListOptions{Limit: 2, Continue: page.Continue})
	require.NoError(t, err)
	assert.Equal(t, "c", rest.Items[0].Name)
	assert.Equal(t, 1, cmServer.RequestCounts().ListPages)

	from := page.ResourceVersion
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: from})
	require.NoError(t, err)
	_, err = cms.Create(ctx, clusterTestCM("d"), metav1.CreateOptions{})
	require.NoError(t, err)
	ev := <-w.ResultChan()
	assert.Equal(t, watch.Added, ev.Type)
	assert.Equal(t, "d", ev.Object.(*corev1.ConfigMap).Name)
	w.Stop()

	cmServer.Compact()
	w, err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: from})
	require.NoError(t, err)
	defer w.Stop()
	ev = <-w.ResultChan()
	require.Equal(t, watch.Error, ev.Type)
	assert.True(t, apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)), "%v", ev.Object)
}

// Injected failures: an API status reaches the client as that status, a 429 with Retry-After
// is retried by client-go itself (on the bubble's clock), and a connection refused arrives as a
// transport error.
func TestClusterFailNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster, _, _ := clusterTestWorld(t)
		cms := cluster.Clientset().CoreV1().ConfigMaps("ns")
		ctx := t.Context()

		cluster.FailNext("create", "configmaps", 1, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "a", nil))
		_, err := cms.Create(ctx, clusterTestCM("a"), metav1.CreateOptions{})
		assert.True(t, apierrors.IsConflict(err), "%v", err)

		cluster.FailNext("*", "configmaps", 2, fake.TooManyRequests(1))
		_, err = cms.Create(ctx, clusterTestCM("a"), metav1.CreateOptions{})
		require.NoError(t, err, "client-go retries a 429 that carries Retry-After")
		assert.Equal(t, 4, cluster.CountCalls("create", "configmaps"))

		cluster.FailNext("get", "*", 1, fake.ConnectionRefused())
		_, err = cms.Get(ctx, "a", metav1.GetOptions{})
		assert.True(t, utilnet.IsConnectionRefused(err), "%v", err)
		calls := cluster.Calls()
		assert.Equal(t, fake.Call{Verb: "get", Resource: corev1.SchemeGroupVersion.WithResource("configmaps"),
			Namespace: "ns", Name: "a"}, calls[len(calls)-1])
	})
}

// The point of a Cluster: a controller's informers (openinformer's factory over the Cluster's
// clientset) see its own writes through one server, and a dropped watch resumes without a full
// sync. In a bubble, so the informers' timing is deterministic.
func TestClusterInformersSeeClientsetWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster, _, cmServer := clusterTestWorld(t, clusterTestCM("a"))
		client := cluster.Clientset()
		factory := informers.NewSharedInformerFactory(client, 0)
		lister := factory.Core().V1().ConfigMaps().Lister()
		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); factory.Shutdown() }()
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
		time.Sleep(time.Minute)
		synctest.Wait()

		_, err := client.CoreV1().ConfigMaps("ns").Create(ctx, clusterTestCM("b"), metav1.CreateOptions{})
		require.NoError(t, err)
		cmServer.CloseWatches()
		_, err = client.CoreV1().ConfigMaps("ns").Update(ctx, clusterTestCM("a", "k", "v"), metav1.UpdateOptions{})
		require.NoError(t, err)
		time.Sleep(time.Minute)
		synctest.Wait()

		got, err := lister.ConfigMaps("ns").Get("a")
		require.NoError(t, err)
		assert.Equal(t, "v", got.Data["k"])
		all, err := lister.List(labels.Everything())
		require.NoError(t, err)
		assert.Len(t, all, 2)
		assert.Equal(t, fake.RequestCounts{InitialWatches: 1, ResumedWatches: 1}, cmServer.RequestCounts())
	})
}

// ServeHTTP serves the same API over a real (loopback) connection, watches included.
func TestClusterServeHTTP(t *testing.T) {
	cluster, _, _ := clusterTestWorld(t)
	srv := httptest.NewServer(cluster)
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	cms := client.CoreV1().ConfigMaps("ns")
	w, err := cms.Watch(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	_, err = cms.Create(t.Context(), clusterTestCM("a"), metav1.CreateOptions{})
	require.NoError(t, err)
	ev := <-w.ResultChan()
	assert.Equal(t, watch.Added, ev.Type)
	assert.Equal(t, "a", ev.Object.(*corev1.ConfigMap).Name)
}

// Custom resources served as unstructured objects work with the dynamic client (and with a
// generated clientset over RESTConfig alike): cluster-scoped here.
func TestClusterUnstructuredCustomResource(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgets := fake.MustNew(fake.Options{GroupVersionKind: gvk, ClusterScoped: true})
	cluster := fake.MustNewCluster(widgets)
	client, err := dynamic.NewForConfig(cluster.RESTConfig())
	require.NoError(t, err)
	gvr := gvk.GroupVersion().WithResource("widgets")
	assert.Equal(t, gvr, widgets.GroupVersionResource())
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetName("w")
	_, err = client.Resource(gvr).Create(t.Context(), u, metav1.CreateOptions{})
	require.NoError(t, err)
	list, err := client.Resource(gvr).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "w", list.Items[0].GetName())
	_, err = client.Resource(gvr).Namespace("ns").Get(t.Context(), "w", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a cluster-scoped resource has no namespaced URL: %v", err)
}

var _ oicache.ListerWatcher = (*fake.Server)(nil)
