// Command quickstart runs a shared informer over pods, prints what it sees
// and exits: the README's thirty-second program. It uses the in-memory fake
// API server, so it runs anywhere; the README shows the line to change to
// watch a real cluster.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	server := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: []runtime.Object{pod("web-1"), pod("web-2")}})
	var lw cache.ListerWatcher = server // a real cluster: see the README

	informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	seen := make(chan string)
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { seen <- "added " + obj.(*corev1.Pod).Name },
		DeleteFunc: func(obj interface{}) {
			key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			seen <- "deleted " + key
		},
	}); err != nil {
		log.Fatal(err)
	}
	go informer.RunWithContext(ctx)

	fmt.Println(<-seen)
	fmt.Println(<-seen)
	if _, err := server.Delete("default", "web-1"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-seen)
	fmt.Println("cached:", informer.GetStore().ListKeys())
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}
