package fake_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientcache "k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/openinformer/cache/fake"
)

// A test against the fake: a reflector mirrors the server's pods, follows changes, then loses
// its watch while a pod is deleted and the history it would resume from is compacted. Resuming
// gets 410 Expired, so the reflector relists and its store learns about the missed delete.
//
// Every informer runs such a reflector; its handlers would get the missed delete as a
// DeletedFinalStateUnknown. An informer relists only after the reflector's default backoff
// (0.8s or more), which the Backoff option shortens here; in a testing/synctest bubble that
// wait costs no real time (see the package doc and examples/testing).
//
// The reflector is client-go's; openinformer's is a drop-in replacement (change the import).
func Example() {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := fake.MustNew(fake.Options{
		Object:  &corev1.Pod{},
		Clock:   clock,
		Objects: []runtime.Object{examplePod("web-1")},
	})

	// The store reports all it holds after every change.
	held := make(chan []string, 10)
	store := clientcache.NewUndeltaStore(func(objs []any) { held <- podNames(objs) }, clientcache.MetaNamespaceKeyFunc)
	reflector := clientcache.NewReflectorWithOptions(srv, &corev1.Pod{}, store, clientcache.ReflectorOptions{
		Backoff: &wait.Backoff{Duration: time.Millisecond},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		reflector.RunWithContext(ctx)
	}()
	defer func() { cancel(); <-done }()

	fmt.Println("listed", <-held)
	_, _ = srv.Create(examplePod("web-2"))
	fmt.Println("watched", <-held)

	// Break the connection at the worst moment.
	release := srv.HoldEvents() // the reflector stops hearing about changes...
	_, _ = srv.Delete("default", "web-1")
	srv.Compact()      // ...the history it would resume from is gone...
	srv.CloseWatches() // ...and its watch drops.
	release()
	fmt.Println("relisted", <-held)

	for _, r := range srv.Requests() {
		fmt.Printf("%s rv=%q sendInitialEvents=%v\n", r.Verb, r.Options.ResourceVersion, r.Options.SendInitialEvents != nil)
	}
	// Output:
	// listed [web-1]
	// watched [web-1 web-2]
	// relisted [web-2]
	// watch rv="" sendInitialEvents=true
	// watch rv="3" sendInitialEvents=false
	// watch rv="3" sendInitialEvents=true
}

func examplePod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

// podNames returns the sorted names of the pods in objs.
func podNames(objs []any) []string {
	names := make([]string, 0, len(objs))
	for _, obj := range objs {
		names = append(names, obj.(*corev1.Pod).Name)
	}
	slices.Sort(names)
	return names
}
