package main

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	cache "github.com/openinformer/cache"
)

// podClient is a clientset whose pod lists and watches, in every
// namespace, are served by lw (the request options passed through whole),
// so the shared informer factory can run on the embedded fake API server
// and the demo can count and explain every request it makes. Other
// resources are client-go's empty fake.
func podClient(ctx context.Context, lw cache.ListerWatcher) kubernetes.Interface {
	client := k8sfake.NewClientset()
	inner := cache.ToListerWatcherWithContext(lw)
	client.PrependReactor("list", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		list, err := inner.ListWithContext(ctx, action.(clienttesting.ListActionImpl).ListOptions)
		return true, list, err
	})
	client.PrependWatchReactor("pods", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := inner.WatchWithContext(ctx, action.(clienttesting.WatchActionImpl).ListOptions)
		return true, w, err
	})
	return client
}
