package cache

import (
	"context"
	"errors"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientfeatures "k8s.io/client-go/features"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// controller runs a Reflector that fills Config.Queue and a loop that pops
// the queue into Config.Process (or ProcessBatch). mu guards reflector,
// set once Run has built it; nothing is called with mu held.
type controller struct {
	config Config
	clock  clock.Clock

	// hooks, given at construction, are the reflector's (a warm start, a
	// compact store's prehold).
	hooks reflectorHooks

	mu        sync.RWMutex
	reflector *Reflector
}

// New returns a Controller for a copy of c. Nothing runs until Run.
func New(c *Config) Controller {
	return newController(c, clock.RealClock{}, reflectorHooks{queue: pretransformedOf(c.Queue)})
}

// newController is New with the clock its Reflector runs on and the
// Reflector's hooks.
func newController(c *Config, clk clock.Clock, hooks reflectorHooks) *controller {
	return &controller{config: *c, clock: clk, hooks: hooks}
}

// Run is RunWithContext with a stop channel.
func (c *controller) Run(stopCh <-chan struct{}) {
	c.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext runs the reflector and the process loop until ctx ends,
// then closes the queue and returns once the reflector has exited. A Config
// without Queue, ListerWatcher or Process is reported and not run.
func (c *controller) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	if err := validateControllerConfig(&c.config); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Controller not started")
		return
	}
	logger := klog.FromContext(ctx)
	r := newReflector(c.config.ListerWatcher, c.config.ObjectType, c.config.Queue, ReflectorOptions{
		Logger:          &logger,
		ResyncPeriod:    c.config.FullResyncPeriod,
		MinWatchTimeout: c.config.MinWatchTimeout,
		TypeDescription: c.config.ObjectDescription,
		Clock:           c.clock,
	}, c.hooks)
	r.ShouldResync = c.config.ShouldResync
	r.WatchListPageSize = c.config.WatchListPageSize
	if h := c.config.WatchErrorHandler; h != nil {
		r.setWatchErrorHandler(func(_ context.Context, r *clientcache.Reflector, err error) { h(r, err) })
	} else if h := c.config.WatchErrorHandlerWithContext; h != nil {
		r.setWatchErrorHandler(h)
	}
	c.mu.Lock()
	c.reflector = r
	c.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		c.config.Queue.Close()
	}()
	go func() {
		defer wg.Done()
		r.RunWithContext(ctx)
	}()
	wait.UntilWithContext(ctx, c.processLoop, time.Second)
	wg.Wait()
}

// validateControllerConfig reports the Config fields without which a
// controller cannot run.
func validateControllerConfig(c *Config) error {
	switch {
	case c.Queue == nil:
		return errors.New("controller Config has no Queue")
	case c.ListerWatcher == nil:
		return errors.New("controller Config has no ListerWatcher")
	case c.Process == nil:
		return errors.New("controller Config has no Process function")
	}
	return nil
}

// HasSynced reports whether the queue has delivered the initial list.
func (c *controller) HasSynced() bool { return c.config.Queue.HasSynced() }

// HasSyncedChecker is the queue's DoneChecker for HasSynced.
func (c *controller) HasSyncedChecker() DoneChecker { return c.config.Queue.HasSyncedChecker() }

// LastSyncResourceVersion is the reflector's, or "" before Run.
func (c *controller) LastSyncResourceVersion() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.reflector == nil {
		return ""
	}
	return c.reflector.LastSyncResourceVersion()
}

// watching reports whether the reflector is past its list, following a
// watch: the store then holds the server's state at its version, with no
// relist under way.
func (c *controller) watching() bool {
	c.mu.RLock()
	r := c.reflector
	c.mu.RUnlock()
	return r != nil && r.watching()
}

// processLoop pops until ctx ends or the queue is closed. A processing
// error is reported and the item dropped: the queue has no requeue.
func (c *controller) processLoop(ctx context.Context) {
	batchQueue, canBatch := c.config.Queue.(QueueWithBatch)
	useBatch := canBatch && c.config.ProcessBatch != nil &&
		clientfeatures.FeatureGates().Enabled(clientfeatures.InOrderInformersBatchProcess)
	process := PopProcessFunc(c.config.Process)
	for ctx.Err() == nil {
		var err error
		if useBatch {
			err = batchQueue.PopBatch(c.config.ProcessBatch, process)
		} else {
			_, err = c.config.Queue.Pop(process)
		}
		switch {
		case errors.Is(err, ErrFIFOClosed):
			return
		case err != nil:
			utilruntime.HandleErrorWithContext(ctx, withoutObjects(err), "Popped item not fully processed")
		}
	}
}
