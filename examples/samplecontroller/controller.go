package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	cache "github.com/openinformer/cache"
)

// fooLabel marks the ConfigMaps this controller treats as Foo objects: in
// sample-controller a Foo is a custom resource; here it is a ConfigMap with
// data deploymentName and replicas, so the example needs no CRD.
const fooLabel = "samplecontroller.example.com/foo"

// Controller keeps, for every Foo, a Deployment of the named size owned by
// it: sample-controller's loop (informers, listers, a rate-limited
// workqueue, a sync handler) with its types swapped for built-in ones.
type Controller struct {
	client      kubernetes.Interface
	foos        corelisters.ConfigMapLister
	deployments appslisters.DeploymentLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[cache.ObjectName]
}

// NewController wires the handlers; the informers' types are client-go's
// (coreinformers.ConfigMapInformer), as in code written for client-go's
// factory, and come from openinformer's.
func NewController(client kubernetes.Interface, foos coreinformers.ConfigMapInformer, deployments appsinformers.DeploymentInformer) (*Controller, error) {
	c := &Controller{
		client:      client,
		foos:        foos.Lister(),
		deployments: deployments.Lister(),
		synced:      []cache.InformerSynced{foos.Informer().HasSynced, deployments.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "foos"}),
	}
	if _, err := foos.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueFoo,
		UpdateFunc: func(_, obj any) { c.enqueueFoo(obj) },
	}); err != nil {
		return nil, err
	}
	// A change to a Deployment re-syncs the Foo that owns it.
	if _, err := deployments.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { c.enqueueOwner(obj) },
		DeleteFunc: c.enqueueOwner,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueueFoo(obj any) {
	if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Labels[fooLabel] == "true" {
		c.queue.Add(cache.MetaObjectToName(cm))
	}
}

func (c *Controller) enqueueOwner(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	if owner := metav1.GetControllerOf(d); owner != nil && owner.Kind == "ConfigMap" {
		c.queue.Add(cache.ObjectName{Namespace: d.Namespace, Name: owner.Name})
	}
}

// Run waits for the caches, then works the queue with workers goroutines
// until ctx ends; it returns when they have stopped.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("caches did not sync")
	}
	done := make(chan struct{}, workers)
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for c.processNext(ctx) {
				}
			}, time.Second)
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	for range workers {
		<-done
	}
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing Foo", "foo", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync makes the Foo's Deployment exist with the Foo's replicas.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	foo, err := c.foos.ConfigMaps(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil // deleted: garbage collection removes the Deployment
	}
	if err != nil {
		return err
	}
	name := foo.Data["deploymentName"]
	replicas, err := strconv.ParseInt(foo.Data["replicas"], 10, 32)
	if name == "" || err != nil {
		klog.FromContext(ctx).Info("Foo is malformed; skipping", "foo", key)
		return nil
	}
	want := deploymentFor(foo, name, int32(replicas))
	have, err := c.deployments.Deployments(key.Namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.client.AppsV1().Deployments(key.Namespace).Create(ctx, want, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	case !metav1.IsControlledBy(have, foo):
		return fmt.Errorf("deployment %s/%s exists and is not owned by Foo %s", key.Namespace, name, key.Name)
	case *have.Spec.Replicas != int32(replicas):
		_, err = c.client.AppsV1().Deployments(key.Namespace).Update(ctx, want, metav1.UpdateOptions{})
		return err
	}
	return nil
}

func deploymentFor(foo *corev1.ConfigMap, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       foo.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(foo, corev1.SchemeGroupVersion.WithKind("ConfigMap"))},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:latest"}}},
			},
		},
	}
}
