// Command samplecontroller is k8s.io/sample-controller's shape running on
// openinformer: a shared informer factory, listers, a workqueue and event
// handlers, with the import of client-go's informers factory swapped for
// github.com/openinformer/cache/informers (and tools/cache for
// github.com/openinformer/cache). It runs on client-go's fake clientset,
// so it needs no cluster: it creates three Foos, waits until the
// controller has made their Deployments, resizes one and waits again.
//
//	go run ./examples/samplecontroller
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/openinformer/cache/informers"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, fake.NewClientset(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "samplecontroller:", err)
		os.Exit(1)
	}
}

// run starts the factory and controller on client, drives three Foos and
// reports the Deployments the controller made.
func run(ctx context.Context, client kubernetes.Interface, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	ctrl, err := NewController(client, factory.Core().V1().ConfigMaps(), factory.Apps().V1().Deployments())
	if err != nil {
		cancel()
		return err
	}
	factory.StartWithContext(ctx)
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx, 2) }()
	defer func() { cancel(); <-done; factory.Shutdown() }()

	for i, replicas := range []int{1, 2, 3} {
		if err := setFoo(ctx, client, "foo-"+strconv.Itoa(i), replicas); err != nil {
			return err
		}
	}
	lister := factory.Apps().V1().Deployments().Lister()
	if err := waitForReplicas(ctx, lister.List, map[string]int32{"foo-0-app": 1, "foo-1-app": 2, "foo-2-app": 3}); err != nil {
		return err
	}
	report(out, "created", lister.List)
	if err := setFoo(ctx, client, "foo-1", 5); err != nil {
		return err
	}
	if err := waitForReplicas(ctx, lister.List, map[string]int32{"foo-0-app": 1, "foo-1-app": 5, "foo-2-app": 3}); err != nil {
		return err
	}
	report(out, "resized", lister.List)
	return nil
}

// setFoo creates or updates Foo name asking for replicas.
func setFoo(ctx context.Context, client kubernetes.Interface, name string, replicas int) error {
	foo := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{fooLabel: "true"}},
		Data:       map[string]string{"deploymentName": name + "-app", "replicas": strconv.Itoa(replicas)},
	}
	cms := client.CoreV1().ConfigMaps("default")
	if _, err := cms.Get(ctx, name, metav1.GetOptions{}); err == nil {
		_, err = cms.Update(ctx, foo, metav1.UpdateOptions{})
		return err
	}
	_, err := cms.Create(ctx, foo, metav1.CreateOptions{})
	return err
}

type deploymentList = func(labels.Selector) ([]*appsv1.Deployment, error)

// waitForReplicas polls the factory's cache until it holds exactly want.
func waitForReplicas(ctx context.Context, list deploymentList, want map[string]int32) error {
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		ds, err := list(labels.Everything())
		if err != nil || len(ds) != len(want) {
			return false, err
		}
		for _, d := range ds {
			if r, ok := want[d.Name]; !ok || *d.Spec.Replicas != r {
				return false, nil
			}
		}
		return true, nil
	})
}

func report(out io.Writer, what string, list deploymentList) {
	ds, _ := list(labels.Everything())
	sort.Slice(ds, func(i, j int) bool { return ds[i].Name < ds[j].Name })
	fmt.Fprintf(out, "%s:", what)
	for _, d := range ds {
		fmt.Fprintf(out, " %s=%d", d.Name, *d.Spec.Replicas)
	}
	fmt.Fprintln(out)
}
