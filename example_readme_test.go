package cache_test

// The README's Go snippets are copied verbatim from this file (see
// readme_test.go), so each of them compiles as shown.

import (
	"context"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/informers"
)

// runPodInformer feeds the key of every pod that changes to queue and
// returns once the handler has seen the initial list.
func runPodInformer(ctx context.Context, client kubernetes.Interface, queue workqueue.TypedRateLimitingInterface[string]) error {
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "pods", metav1.NamespaceAll, fields.Everything())
	informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { enqueue(queue, obj) },
		UpdateFunc: func(_, obj interface{}) { enqueue(queue, obj) },
		DeleteFunc: func(obj interface{}) { enqueue(queue, obj) }, // may be a DeletedFinalStateUnknown
	})
	if err != nil {
		return err
	}
	go informer.RunWithContext(ctx)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, reg.HasSynced) {
		return ctx.Err()
	}
	return nil
}

func enqueue(queue workqueue.TypedRateLimitingInterface[string], obj interface{}) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		queue.Add(key)
	}
}

// podsOnNode indexes pods by node, allowed before and after Run (existing
// objects are indexed at once), and reads them back two ways.
func podsOnNode(informer cache.SharedIndexInformer, node string) ([]interface{}, []*corev1.Pod, error) {
	err := informer.AddIndexers(cache.Indexers{"byNode": func(obj interface{}) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}})
	if err != nil {
		return nil, nil, err
	}
	onNode, err := informer.GetIndexer().ByIndex("byNode", node)
	if err != nil {
		return nil, nil, err
	}
	lister := listersv1.NewPodLister(informer.GetIndexer()) // client-go's generated lister
	all, err := lister.List(labels.Everything())
	return onNode, all, err
}

// trimAndWatch keeps the cache lean, then adds a handler with its own
// resync period and later removes it.
func trimAndWatch(informer cache.SharedIndexInformer, handler cache.ResourceEventHandler) error {
	err := informer.SetTransform(func(obj interface{}) (interface{}, error) { // before Run only; must be idempotent
		if p, ok := obj.(*corev1.Pod); ok {
			p.ManagedFields = nil
		}
		return obj, nil
	})
	if err != nil {
		return err
	}
	reg, err := informer.AddEventHandlerWithOptions(handler, cache.HandlerOptions{ResyncPeriod: ptr.To(time.Minute)})
	if err != nil {
		return err
	}
	_ = reg.HasSynced()                                      // this handler has processed the initial list
	if err := informer.RemoveEventHandler(reg); err != nil { // asynchronous: stops delivery
		return err
	}
	cache.ShutDownEventHandler(informer, reg) // ...and waits until the handler has returned
	return nil
}

// newBoundedInformer reports each handler's lag and bounds its backlog.
func newBoundedInformer(lw cache.ListerWatcher, provider cache.HandlerMetricsProvider) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		MaxPendingNotificationsPerHandler: 10_000,           // 0 (default): unbounded, like client-go
		HandlerMetricsProvider:            provider,         // pending, oldest age, collapses per handler
		SlowHandlerThreshold:              30 * time.Second, // log a warning naming the handler
	})
}

// newLeanInformer caches pods encoded and without managedFields: 0.17× the
// heap client-go's informer takes for the same pods (README "Memory").
func newLeanInformer(lw cache.ListerWatcher) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		Indexers:           cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		Compact:            &cache.CompactOptions{HotObjects: 5000}, // 0: none; cache.DefaultHotObjects is 1000
		StripManagedFields: true,
	})
}

// newColdInformer compresses pods nobody read or wrote for five minutes
// (README "Memory", the cold tier).
func newColdInformer(lw cache.ListerWatcher) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		Indexers:           cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		Compact:            &cache.CompactOptions{HotObjects: cache.DefaultHotObjects, ColdAfter: 5 * time.Minute},
		StripManagedFields: true,
	})
}

// newBudgetInformer keeps its pods in 128 MiB, compressing the coldest
// first (README "Memory", the memory budget).
func newBudgetInformer(lw cache.ListerWatcher) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		Indexers:           cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		Compact:            &cache.CompactOptions{HotObjects: cache.DefaultHotObjects, MemoryBudget: 128 << 20},
		StripManagedFields: true,
	})
}

// newInformerWithEveryOption spells out every SharedIndexInformerOptions
// field at its zero value, with what that value means.
func newInformerWithEveryOption(lw cache.ListerWatcher) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		// client-go's fields
		ResyncPeriod:            0,                               // no resyncs
		Indexers:                nil,                             // no indexes
		ObjectDescription:       "",                              // reflector logs name the example object's type
		Identifier:              cache.InformerNameAndResource{}, // no informer metrics
		InformerMetricsProvider: nil,                             // the process-wide one (SetInformerMetricsProvider)
		ShardSelector:           nil,                             // every object (client-go v0.38's field; this module has it on v0.37 too)
		// openinformer's: each zero value behaves like client-go, log lines included
		MaxPendingNotificationsPerHandler: 0,     // backlogs unbounded
		HandlerMetricsProvider:            nil,   // the process-wide one (SetHandlerMetricsProvider), by default none
		SlowHandlerThreshold:              0,     // no lag warning; cache.DefaultSlowHandlerThreshold (10 s) turns it on
		StripManagedFields:                false, // objects cached with their managedFields
		Compact:                           nil,   // objects cached decoded (CompactOptions.ColdAfter: the cold tier)
		Snapshot:                          nil,   // no warm restarts: every start syncs from the server (docs/RESTART.md)
	})
}

// newRestartableInformer saves its cache in dir and, restarted inside the
// server's watch window, resumes from it without a LIST.
func newRestartableInformer(client kubernetes.Interface, dir string) cache.SharedIndexInformer {
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "pods", metav1.NamespaceAll, fields.Everything())
	return cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		Compact:  &cache.CompactOptions{}, // a compact cache loads without decoding
		// Saved at stop (and every 5 minutes); its scope comes from lw.
		Snapshot: &cache.SnapshotOptions{Path: filepath.Join(dir, "pods.snap")},
	})
}

// newRestartableFactory gives each of its informers a snapshot file in dir.
func newRestartableFactory(client kubernetes.Interface, dir string) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithSnapshots(dir, "v1")) // bump "v1" when a transform or an index function changes
}

// breakThings injects faults a real cluster produces.
func breakThings(server *fake.Server) ([]fake.Request, error) {
	server.FailNextWatches(3, fake.TooManyRequests(1)) // three watch starts get 429 with Retry-After: 1
	release := server.HoldEvents()
	if _, err := server.Delete("default", "a"); err != nil { // the informer's watch misses this delete...
		return nil, err
	}
	server.Compact()      // ...history is gone...
	server.CloseWatches() // ...so the informer's next watch gets 410 Gone and relists
	release()
	return server.Requests(), nil // every LIST and WATCH with its options
}

// The README's snippets, compiled; Example_readme itself is not run.
func Example_readme() {
	_ = runPodInformer
	_ = podsOnNode
	_ = trimAndWatch
	_ = newBoundedInformer
	_ = newLeanInformer
	_ = newColdInformer
	_ = newBudgetInformer
	_ = newInformerWithEveryOption
	_ = newRestartableInformer
	_ = newRestartableFactory
	_ = breakThings
}
