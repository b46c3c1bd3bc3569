// Command listers shows that client-go's generated listers read straight from
// an openinformer indexer, and how a custom index answers a question that the
// generated lister cannot: "which pods run on this node?".
//
//	go run ./examples/listers
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	listersv1 "k8s.io/client-go/listers/core/v1"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
)

// byNodeIndex is the name of the custom index of pods by spec.nodeName.
const byNodeIndex = "byNode"

// podNodeIndexFunc indexes scheduled pods by node; unscheduled pods are left
// out of the index rather than filed under "".
func podNodeIndexFunc(obj interface{}) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("expected *v1.Pod, got %T", obj)
	}
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{pod.Spec.NodeName}, nil
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "listers:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	server, err := fake.New(fake.Options{Object: &corev1.Pod{}, Objects: samplePods()})
	if err != nil {
		return err
	}
	informer := cache.NewSharedIndexInformer(server, &corev1.Pod{}, 0, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		byNodeIndex:          podNodeIndexFunc,
	})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitFor(ctx, "", informer.HasSyncedChecker()) { // wakes on sync, no polling
		return fmt.Errorf("cache did not sync")
	}

	// The generated lister takes any client-go Indexer; ours is one.
	pods := listersv1.NewPodLister(informer.GetIndexer())
	web, err := pods.Pods("shop").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "pods in namespace shop with app=web: %s\n", names(web))

	one, err := pods.Pods("shop").Get("web-1")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "shop/web-1 runs on %s\n", one.Spec.NodeName)

	if _, err := pods.Pods("shop").Get("missing"); err != nil {
		fmt.Fprintf(out, "shop/missing: %v\n", err)
	}

	onNode, err := informer.GetIndexer().ByIndex(byNodeIndex, "node-a")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "pods on node-a (custom index): %s\n", names(toPods(onNode)))

	nodes := informer.GetIndexer().ListIndexFuncValues(byNodeIndex)
	sort.Strings(nodes)
	fmt.Fprintf(out, "nodes with pods: %v\n", nodes)
	return nil
}

func samplePods() []runtime.Object {
	pod := func(ns, name, app, node string) runtime.Object {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{NodeName: node},
		}
	}
	return []runtime.Object{
		pod("shop", "web-1", "web", "node-a"),
		pod("shop", "web-2", "web", "node-b"),
		pod("shop", "db-1", "db", "node-a"),
		pod("blog", "web-1", "web", "node-b"),
		pod("blog", "pending-1", "web", ""),
	}
}

func toPods(objs []interface{}) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	return pods
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	sort.Strings(out)
	return out
}
