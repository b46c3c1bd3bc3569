package main

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"

	cache "github.com/openinformer/cache"
)

// controller is the classic client-go pattern: handlers only enqueue keys,
// workers read the latest state from the informer's indexer.
type controller struct {
	indexer cache.Indexer
	queue   workqueue.TypedRateLimitingInterface[string]
	synced  atomic.Int64
	gone    atomic.Int64
}

func newController(indexer cache.Indexer) *controller {
	return &controller{
		indexer: indexer,
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
	}
}

// handler enqueues the key of every changed pod, tombstones included.
func (c *controller) handler() cache.ResourceEventHandler {
	enqueue := func(obj interface{}) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			runtime.HandleError(err)
			return
		}
		c.queue.Add(key)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
}

// run processes keys with the given number of workers until ctx ends.
func (c *controller) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext() {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *controller) processNext() bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if _, exists, _ := c.indexer.GetByKey(key); exists {
		c.synced.Add(1)
	} else {
		c.gone.Add(1)
	}
	c.queue.Forget(key)
	return true
}

func (c *controller) reconciled() int64 { return c.synced.Load() + c.gone.Load() }
