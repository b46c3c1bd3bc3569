package fake_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/openinformer/cache/fake"
)

// A controller test against the fake: the informer syncs, follows changes, then loses its watch
// while a pod is deleted and the history it would resume from is compacted. Resuming gets
// 410 Expired, so the informer relists and the handler learns about the missed delete.
//
// The informer is client-go's; openinformer's is a drop-in replacement (change the import).
func Example() {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := fake.MustNew(fake.Options{
		Object:  &corev1.Pod{},
		Clock:   clock,
		Objects: []runtime.Object{examplePod("web-1")},
	})

	seen := make(chan string, 10)
	informer := clientcache.NewSharedIndexInformer(srv, &corev1.Pod{}, 0, clientcache.Indexers{})
	_, _ = informer.AddEventHandler(clientcache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { seen <- "added " + obj.(*corev1.Pod).Name },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(clientcache.DeletedFinalStateUnknown); ok {
				seen <- "deleted " + tomb.Key + " (noticed on relist)"
				return
			}
			seen <- "deleted " + obj.(*corev1.Pod).Name
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	defer func() { cancel(); <-done }()

	fmt.Println(<-seen)
	_, _ = srv.Create(examplePod("web-2"))
	fmt.Println(<-seen)

	// Break the connection at the worst moment.
	release := srv.HoldEvents() // the informer stops hearing about changes...
	_, _ = srv.Delete("default", "web-1")
	srv.Compact()      // ...the history it would resume from is gone...
	srv.CloseWatches() // ...and its watch drops.
	release()
	fmt.Println(<-seen)

	for _, r := range srv.Requests() {
		fmt.Printf("%s rv=%q sendInitialEvents=%v\n", r.Verb, r.Options.ResourceVersion, r.Options.SendInitialEvents != nil)
	}
	// Output:
	// added web-1
	// added web-2
	// deleted default/web-1 (noticed on relist)
	// watch rv="" sendInitialEvents=true
	// watch rv="3" sendInitialEvents=false
	// watch rv="3" sendInitialEvents=true
}

func examplePod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}
