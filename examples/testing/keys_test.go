package testing

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/informers"
)

// A controller's whole world is a fake.Cluster: one Server per resource it reads or writes,
// served to a real clientset. Its informers and its writes meet the same Servers, so there is
// no reactor to write and nothing to mirror, and each Server keeps its semantics (versions,
// conflicts, 410s, faults) and counts what it was asked.

func secret(name string, keys ...string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string][]byte{}}
	for _, k := range keys {
		s.Data[k] = []byte("value of " + k)
	}
	return s
}

// keysWorld serves Secrets and ConfigMaps; call it inside the bubble.
func keysWorld(secrets ...runtime.Object) (*fake.Cluster, *fake.Server, *fake.Server) {
	secretServer := fake.MustNew(fake.Options{Object: &corev1.Secret{}, Objects: secrets})
	configMapServer := fake.MustNew(fake.Options{Object: &corev1.ConfigMap{}})
	return fake.MustNewCluster(secretServer, configMapServer), secretServer, configMapServer
}

// runKeysPublisher runs the controller with openinformer's factory on client, with extra
// factory options, lets it settle, and returns the function that stops it.
func runKeysPublisher(t *testing.T, client kubernetes.Interface, opts ...informers.SharedInformerOption) (stop func()) {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	ctrl, err := NewKeysPublisher(client, factory)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	factory.Start(ctx.Done())
	go func() { done <- ctrl.Run(ctx, 2) }()
	settle(time.Minute)
	return func() {
		cancel()
		require.NoError(t, <-done)
		factory.Shutdown()
	}
}

func keysOf(t *testing.T, server *fake.Server, name string) string {
	t.Helper()
	obj, err := server.Get("default", name+KeysSuffix)
	require.NoError(t, err)
	return obj.(*corev1.ConfigMap).Data["keys"]
}

// The controller creates, updates and deletes ConfigMaps as Secrets come, change and go, and
// puts back a ConfigMap someone else changed: every write succeeds the first time (no
// AlreadyExists or Conflict loops), because its informers see its own writes.
func TestKeysPublisherFollowsSecrets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster, _, configMaps := keysWorld(secret("db", "user", "password"))
		client := cluster.Clientset()
		defer runKeysPublisher(t, client)()
		assert.Equal(t, "password,user", keysOf(t, configMaps, "db"))

		ctx := t.Context()
		_, err := client.CoreV1().Secrets("default").Update(ctx, secret("db", "user", "password", "host"), metav1.UpdateOptions{})
		require.NoError(t, err)
		_, err = client.CoreV1().Secrets("default").Create(ctx, secret("api", "token"), metav1.CreateOptions{})
		require.NoError(t, err)
		settle(time.Minute)
		assert.Equal(t, "host,password,user", keysOf(t, configMaps, "db"))
		assert.Equal(t, "token", keysOf(t, configMaps, "api"))

		tampered := configMaps.Objects()[0].(*corev1.ConfigMap) // api-keys
		tampered.Data["keys"] = "nonsense"
		_, err = configMaps.Update(tampered)
		require.NoError(t, err)
		require.NoError(t, client.CoreV1().Secrets("default").Delete(ctx, "db", metav1.DeleteOptions{}))
		settle(time.Minute)
		assert.Equal(t, "token", keysOf(t, configMaps, "api"))
		_, err = configMaps.Get("default", "db"+KeysSuffix)
		assert.Error(t, err, "the ConfigMap goes with its Secret")

		for verb, want := range map[string]int{"create": 2, "update": 2, "delete": 1} {
			assert.Equal(t, want, cluster.CountCalls(verb, "configmaps"), verb)
		}
		for _, call := range cluster.Calls() {
			assert.Less(t, call.Code, 300, "%+v", call)
		}
	})
}

// Faults on the controller's writes and reads: a create that fails twice is retried by the
// workqueue; a dropped watch resumes from its resourceVersion without a new LIST.
func TestKeysPublisherRetriesThroughFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster, secrets, configMaps := keysWorld()
		client := cluster.Clientset()
		cluster.FailNext("create", "configmaps", 2, fake.InternalError("etcd timeout"))
		defer runKeysPublisher(t, client)()

		secrets.CloseWatches()
		_, err := client.CoreV1().Secrets("default").Create(t.Context(), secret("db", "user"), metav1.CreateOptions{})
		require.NoError(t, err)
		settle(time.Minute)
		assert.Equal(t, "user", keysOf(t, configMaps, "db"))
		assert.Equal(t, 3, cluster.CountCalls("create", "configmaps"), "two failures, then the retry")
		assert.Equal(t, fake.RequestCounts{InitialWatches: 1, ResumedWatches: 1}, secrets.RequestCounts())
	})
}

// A warm restart against the same Cluster: the first run saves its caches to snapshots when it
// stops; the second starts from them, catches up by watching from the saved resourceVersions,
// and sends the Servers no full LIST, yet sees what changed while it was down.
func TestKeysPublisherRestartsWarm(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		cluster, secrets, configMaps := keysWorld(secret("db", "user"))
		client := cluster.Clientset()
		runKeysPublisher(t, client, informers.WithSnapshots(dir, "v1"))() // stopping saves the snapshots
		assert.Equal(t, 1, secrets.RequestCounts().FullSyncs())

		_, err := client.CoreV1().Secrets("default").Update(t.Context(), secret("db", "user", "password"), metav1.UpdateOptions{})
		require.NoError(t, err)
		secrets.ResetRequests()
		configMaps.ResetRequests()
		defer runKeysPublisher(t, client, informers.WithSnapshots(dir, "v1"))()
		assert.Equal(t, "password,user", keysOf(t, configMaps, "db"))
		assert.Zero(t, secrets.RequestCounts().FullSyncs()+configMaps.RequestCounts().FullSyncs(), "no full LIST after a warm restart")
	})
}
