package cache_test

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
)

func examplePod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// A shared informer over the in-memory fake API server: it syncs, then
// reports a change made on the server.
func ExampleNewSharedIndexInformer() {
	server := fake.MustNew(fake.Options{
		Object:  &corev1.Pod{},
		Objects: []runtime.Object{examplePod("default", "web-1")},
	})
	informer := cache.NewSharedIndexInformer(server, &corev1.Pod{}, 0, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	})
	deleted := make(chan string, 1)
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { fmt.Println("added", obj.(*corev1.Pod).Name) },
		DeleteFunc: func(obj interface{}) {
			key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			deleted <- key
		},
	})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	cache.WaitFor(ctx, "", informer.HasSyncedChecker()) // wakes on sync, where WaitForCacheSync polls every 100ms

	_, _ = server.Delete("default", "web-1")
	fmt.Println("deleted", <-deleted)
	cancel()
	<-done
	// Output:
	// added web-1
	// deleted default/web-1
}

// An Indexer on its own: a thread-safe store with secondary indexes.
func ExampleNewIndexer() {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
	})
	for _, p := range []*corev1.Pod{examplePod("shop", "web"), examplePod("shop", "db"), examplePod("blog", "web")} {
		_ = indexer.Add(p)
	}
	keys, _ := indexer.IndexKeys(cache.NamespaceIndex, "shop")
	fmt.Println(keys)
	namespaces := indexer.ListIndexFuncValues(cache.NamespaceIndex)
	sort.Strings(namespaces)
	fmt.Println(namespaces)
	// Output:
	// [shop/db shop/web]
	// [blog shop]
}

// The fake API server injects the faults of a real cluster. Here every
// watch is dropped and history compacted, so a client resuming from an old
// resource version gets 410 Gone and must relist. The Reflector under every
// informer does that after one step of its backoff (at least 800ms by
// default); the Backoff option shortens it.
func ExampleNewReflectorWithOptions_relistAfterGone() {
	server := fake.MustNew(fake.Options{Object: &corev1.Pod{}})
	keys := make(chan []string, 10) // the store's keys after every change
	store := cache.NewUndeltaStore(func(objs []interface{}) { keys <- sortedKeys(objs) }, cache.MetaNamespaceKeyFunc)
	reflector := cache.NewReflectorWithOptions(server, &corev1.Pod{}, store, cache.ReflectorOptions{
		Backoff: &wait.Backoff{Duration: time.Millisecond},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); reflector.RunWithContext(ctx) }()
	<-keys // the initial list: empty
	// A watch that ends quickly without delivering anything is retried as a
	// new list, so let this one deliver an event first.
	_, _ = server.Create(examplePod("default", "seen-by-the-watch"))
	<-keys

	release := server.HoldEvents()
	_, _ = server.Delete("default", "seen-by-the-watch")
	_, _ = server.Create(examplePod("default", "missed-by-the-watch"))
	server.Compact()
	server.CloseWatches()
	release()

	fmt.Println(<-keys)
	cancel()
	<-done
	// Output:
	// [default/missed-by-the-watch]
}

// sortedKeys returns the sorted keys of objs.
func sortedKeys(objs []interface{}) []string {
	keys := make([]string, 0, len(objs))
	for _, obj := range objs {
		key, _ := cache.MetaNamespaceKeyFunc(obj)
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}
