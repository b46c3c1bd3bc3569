// Command quickstart runs a shared informer over pods for three seconds and
// prints what it sees: the README's thirty-second program. Its pods come from
// the in-memory fake API server, so it runs anywhere; the README shows how
// to point listerWatcher at a real cluster instead.
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()

	informer := cache.NewSharedIndexInformer(listerWatcher(), &corev1.Pod{}, 0, cache.Indexers{})
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { fmt.Println("added", key(obj)) },
		UpdateFunc: func(_, obj interface{}) { fmt.Println("updated", key(obj)) },
		DeleteFunc: func(obj interface{}) { fmt.Println("deleted", key(obj)) },
	})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		log.Fatal("the informer did not sync")
	}
	fmt.Println("synced:", len(informer.GetStore().ListKeys()), "pods cached")
	<-done // events keep arriving until the timeout stops the informer
}

// listerWatcher serves two pods from an in-memory API server and deletes one
// of them a second later.
func listerWatcher() cache.ListerWatcher {
	server := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: []runtime.Object{pod("web-1"), pod("web-2")}})
	time.AfterFunc(time.Second, func() {
		if _, err := server.Delete("default", "web-1"); err != nil {
			log.Print(err)
		}
	})
	return server
}

func key(obj interface{}) string {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return err.Error()
	}
	return k
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}
