package testing

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"

	cache "github.com/openinformer/cache"
)

// KeysSuffix names the ConfigMap a KeysPublisher keeps for a Secret: "<secret>-keys".
const KeysSuffix = "-keys"

// KeysPublisher is a controller in sample-controller's style: for every Secret it keeps a
// ConfigMap "<secret>-keys", controlled by the Secret, whose "keys" entry lists the Secret's
// data keys (never its values). It reads through informers and listers, writes through a
// clientset, and retries through a rate-limited workqueue; its test runs it against a
// fake.Cluster, with no reactors.
type KeysPublisher struct {
	client     kubernetes.Interface
	secrets    corelisters.SecretLister
	configMaps corelisters.ConfigMapLister
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
}

// NewKeysPublisher wires a KeysPublisher to the factory's Secret and ConfigMap informers; start
// the factory after it.
func NewKeysPublisher(client kubernetes.Interface, factory clientinformers.SharedInformerFactory) (*KeysPublisher, error) {
	secrets, configMaps := factory.Core().V1().Secrets(), factory.Core().V1().ConfigMaps()
	c := &KeysPublisher{
		client:     client,
		secrets:    secrets.Lister(),
		configMaps: configMaps.Lister(),
		synced:     []cache.InformerSynced{secrets.Informer().HasSynced, configMaps.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "keys"}),
	}
	if _, err := secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	// A ConfigMap changed or deleted by someone else is put back by resyncing its Secret.
	_, err := configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { c.enqueueOwner(obj) },
		DeleteFunc: c.enqueueOwner,
	})
	return c, err
}

func (c *KeysPublisher) enqueue(obj interface{}) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func (c *KeysPublisher) enqueueOwner(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	if owner := metav1.GetControllerOf(cm); owner != nil && owner.Kind == "Secret" {
		c.queue.Add(cm.Namespace + "/" + owner.Name)
	}
}

// Run waits for the caches, then syncs with workers goroutines until ctx ends, and returns
// once they have.
func (c *KeysPublisher) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("caches did not sync")
	}
	done := make(chan struct{}, workers)
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			wait.UntilWithContext(ctx, c.work, time.Second)
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	for range workers {
		<-done
	}
	return nil
}

// work syncs keys until the queue shuts down.
func (c *KeysPublisher) work(ctx context.Context) {
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		if err := c.sync(ctx, key); err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Syncing secret keys", "key", key)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// sync makes the Secret's ConfigMap match it: created, updated, or deleted with the Secret.
func (c *KeysPublisher) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a malformed key never becomes valid
	}
	secret, err := c.secrets.Secrets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return c.deleteKeys(ctx, ns, name+KeysSuffix)
	}
	if err != nil {
		return err
	}
	want := keysFor(secret)
	cm, err := c.configMaps.ConfigMaps(ns).Get(want.Name)
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.client.CoreV1().ConfigMaps(ns).Create(ctx, want, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	case !metav1.IsControlledBy(cm, secret):
		return fmt.Errorf("configmap %s/%s exists and is not controlled by secret %s", ns, want.Name, name)
	case maps.Equal(cm.Data, want.Data):
		return nil
	}
	cm = cm.DeepCopy() // never modify the cache's object
	cm.Data = want.Data
	_, err = c.client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// deleteKeys deletes a Secret's ConfigMap, as a real cluster's garbage collector would, so that
// the controller also works where none runs; one the cache does not hold is gone already.
func (c *KeysPublisher) deleteKeys(ctx context.Context, ns, name string) error {
	if _, err := c.configMaps.ConfigMaps(ns).Get(name); apierrors.IsNotFound(err) {
		return nil
	}
	err := c.client.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// keysFor is the ConfigMap a Secret should have.
func keysFor(secret *corev1.Secret) *corev1.ConfigMap {
	keys := slices.Sorted(maps.Keys(secret.Data))
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       secret.Namespace,
			Name:            secret.Name + KeysSuffix,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(secret, corev1.SchemeGroupVersion.WithKind("Secret"))},
		},
		Data: map[string]string{"keys": strings.Join(keys, ",")},
	}
}
