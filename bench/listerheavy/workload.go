package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	ours "github.com/openinformer/cache"
	"github.com/openinformer/cache/informers"
	"github.com/openinformer/cache/internal/fixtures"
)

// The workload's controllers and how often they read, modelled on the
// kube-controller-manager's readers of pods (issue 41's heap profile).
const (
	// workers process the queue of service and ReplicaSet keys, as the
	// endpoints and ReplicaSet controllers do with theirs.
	workers = 2
	// serviceResync re-enqueues every service, as the endpoints
	// controller's periodic full sync does.
	serviceResync = 30 * time.Second
	// fullListEvery is pod GC's and the attach-detach metrics collector's
	// full list of pods.
	fullListEvery = 20 * time.Second
	// nodeTick reads the pods of one tenth of the nodes by the node index,
	// as node lifecycle does for nodes it looks at, so every node once per
	// ten ticks.
	nodeTick = 5 * time.Second
	// nodeIndex is the pod index by spec.nodeName.
	nodeIndex = "spec.nodeName"
)

// budgetOptions are the compact-budget variant's: each informer's memory
// budget is 48 MiB, about 0.45x of what client-go's pod informer holds for
// 5000 pods, and the hot cache may take all the room the budget leaves.
var budgetOptions = ours.CompactOptions{HotObjects: 1 << 20, MemoryBudget: 48 << 20}

// coldOptions are the compact-cold variant's: the cold tier compresses what
// nobody read for 10 s, half the period of the workload's full lists, so
// that objects do go cold between the reads.
var coldOptions = ours.CompactOptions{HotObjects: ours.DefaultHotObjects, ColdAfter: 10 * time.Second}

// tightOptions are the compact-tight variant's: a budget of 24 MiB per
// informer, about a fifth of what client-go's pod informer holds for 5000
// pods, with the default hot cache, so that most objects stay compressed
// and every full list decompresses them.
var tightOptions = ours.CompactOptions{HotObjects: ours.DefaultHotObjects, MemoryBudget: 24 << 20}

// newFactory is the variant's typed informer factory, as a user swaps it in:
// the workload below is the same code on each, written against client-go's
// SharedInformerFactory interface and its generated listers.
func newFactory(variant string, cs kubernetes.Interface) (clientinformers.SharedInformerFactory, error) {
	compact := func(strip bool, c ours.CompactOptions) informers.SharedInformerOption {
		return informers.WithInformerOptions(func(_ runtime.Object, o *ours.SharedIndexInformerOptions) {
			o.Compact = &c
			o.StripManagedFields = strip
		})
	}
	defaults := ours.CompactOptions{HotObjects: ours.DefaultHotObjects}
	switch variant {
	case "client-go":
		return clientinformers.NewSharedInformerFactory(cs, 0), nil
	case "ours":
		return informers.NewSharedInformerFactory(cs, 0), nil
	case "compact":
		return informers.NewSharedInformerFactoryWithOptions(cs, 0, compact(true, defaults)), nil
	case "compact-keep":
		return informers.NewSharedInformerFactoryWithOptions(cs, 0, compact(false, defaults)), nil
	case "compact-budget":
		// A hot set as large as the cache, held to what a budget leaves it.
		return informers.NewSharedInformerFactoryWithOptions(cs, 0, compact(true, budgetOptions)), nil
	case "compact-cold":
		return informers.NewSharedInformerFactoryWithOptions(cs, 0, compact(true, coldOptions)), nil
	case "compact-tight":
		return informers.NewSharedInformerFactoryWithOptions(cs, 0, compact(true, tightOptions)), nil
	}
	return nil, fmt.Errorf("unknown variant %q", variant)
}

// work counts what the controllers did, so that variants can be checked to
// have done the same work.
type work struct {
	events, syncs, lists, listed atomic.Int64
}

// workloadCounts is a copy of work's counters.
type workloadCounts struct{ Events, Syncs, Lists, Listed int64 }

func (w *work) snapshot() workloadCounts {
	return workloadCounts{Events: w.events.Load(), Syncs: w.syncs.Load(), Lists: w.lists.Load(), Listed: w.listed.Load()}
}

// controllers are the workload's readers of one pod informer.
type controllers struct {
	pods    corelisters.PodLister
	indexer clientcache.Indexer
	queue   workqueue.TypedInterface[string]
	w       *work
}

// queue keys: "svc|ns|instance" lists the pods a service selects (the
// endpoints and EndpointSlice controllers), "rs|ns|instance|hash" the pods
// of a ReplicaSet.
func serviceKey(p *corev1.Pod) string {
	return "svc|" + p.Namespace + "|" + p.Labels["app.kubernetes.io/instance"]
}

func replicaSetKey(p *corev1.Pod) string {
	return "rs|" + p.Namespace + "|" + p.Labels["app.kubernetes.io/instance"] + "|" + p.Labels["pod-template-hash"]
}

// setUp adds the node index and the event handler that enqueues a pod's
// service and ReplicaSet, as those controllers' pod handlers do.
func setUp(f clientinformers.SharedInformerFactory, w *work) (*controllers, clientcache.ResourceEventHandlerRegistration, error) {
	pi := f.Core().V1().Pods()
	inf := pi.Informer()
	if err := inf.AddIndexers(clientcache.Indexers{nodeIndex: func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}); err != nil {
		return nil, nil, err
	}
	c := &controllers{pods: pi.Lister(), indexer: inf.GetIndexer(), queue: workqueue.NewTyped[string](), w: w}
	enqueue := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			w.events.Add(1)
			c.queue.Add(serviceKey(p))
			c.queue.Add(replicaSetKey(p))
		}
	}
	reg, err := inf.AddEventHandler(clientcache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	return c, reg, err
}

// run starts the workers and periodic readers; they end when ctx does.
func (c *controllers) run(ctx context.Context) {
	for range workers {
		go func() {
			for c.processNext() {
			}
		}()
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	go every(ctx, serviceResync, c.resyncServices)
	go every(ctx, fullListEvery, c.fullList)
	node := 0
	go every(ctx, nodeTick, func() {
		for range fixtures.Nodes / 10 {
			c.byNode(fixtures.NodeName(node % fixtures.Nodes))
			node++
		}
	})
}

// every calls fn now and then every period until ctx ends.
func every(ctx context.Context, period time.Duration, fn func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		fn()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *controllers) processNext() bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	c.sync(key)
	return true
}

// sync lists the pods key selects in its namespace and reads each, as a
// controller computing endpoints or replica counts does.
func (c *controllers) sync(key string) {
	parts := strings.Split(key, "|")
	set := labels.Set{"app.kubernetes.io/instance": parts[2]}
	if parts[0] == "rs" {
		set["pod-template-hash"] = parts[3]
	}
	pods, err := c.pods.Pods(parts[1]).List(labels.SelectorFromSet(set))
	if err != nil {
		return
	}
	c.w.syncs.Add(1)
	c.count(pods)
}

// count reads what a controller reads of each pod listed.
func (c *controllers) count(pods []*corev1.Pod) int {
	c.w.lists.Add(1)
	c.w.listed.Add(int64(len(pods)))
	ready := 0
	for _, p := range pods {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready
}

// resyncServices enqueues every service the pods have.
func (c *controllers) resyncServices() {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return
	}
	c.count(pods)
	for _, p := range pods {
		c.queue.Add(serviceKey(p))
	}
}

// fullList is a periodic full list of pods.
func (c *controllers) fullList() {
	if pods, err := c.pods.List(labels.Everything()); err == nil {
		c.count(pods)
	}
}

// byNode reads one node's pods through the node index.
func (c *controllers) byNode(node string) {
	objs, err := c.indexer.ByIndex(nodeIndex, node)
	if err != nil {
		return
	}
	pods := make([]*corev1.Pod, len(objs))
	for i, o := range objs {
		pods[i] = o.(*corev1.Pod)
	}
	c.count(pods)
}
