package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

	mu        sync.RWMutex
	reflector *Reflector
}

// New returns a Controller for a copy of c. Nothing runs until Run.
func New(c *Config) Controller { return newController(c, clock.RealClock{}) }

// newController is New with the clock its Reflector runs on.
func newController(c *Config, clk clock.Clock) *controller {
	return &controller{config: *c, clock: clk}
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
	r := NewReflectorWithOptions(c.config.ListerWatcher, c.config.ObjectType, c.config.Queue, ReflectorOptions{
		Logger:          &logger,
		ResyncPeriod:    c.config.FullResyncPeriod,
		MinWatchTimeout: c.config.MinWatchTimeout,
		TypeDescription: c.config.ObjectDescription,
		Clock:           c.clock,
	})
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

// withoutObjects returns err for a log line of ours: the text of every
// KeyError in it is replaced by what identifies the object (its key, or
// just its type) and the error's cause. A KeyError's own text prints the
// whole object, and a Secret's data has no place in a log. errors.Is and
// errors.As still see err through the result.
func withoutObjects(err error) error {
	msg := err.Error()
	changed := false
	eachError(err, func(e error) {
		var ke KeyError
		switch v := e.(type) {
		case KeyError:
			ke = v
		case *KeyError:
			if v == nil {
				return
			}
			ke = *v
		default:
			return
		}
		safe := fmt.Sprintf("couldn't create key for object %s: %v", objectIdentity(ke.Obj), ke.Err)
		if full := ke.Error(); strings.Contains(msg, full) {
			msg = strings.ReplaceAll(msg, full, safe)
			changed = true
		}
	})
	if !changed {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// eachError calls f on err and every error it wraps, outermost first.
func eachError(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		eachError(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			eachError(e, f)
		}
	}
}

// objectIdentity names an object without its contents: its type and, when
// it has one, its namespace/name key (a tombstone's or the newest delta's
// object's for those wrappers).
func objectIdentity(obj interface{}) string {
	switch o := obj.(type) {
	case DeletedFinalStateUnknown:
		return fmt.Sprintf("%q (a DeletedFinalStateUnknown)", o.Key)
	case Deltas:
		if newest := o.Newest(); newest != nil {
			return objectIdentity(newest.Object) + " (in Deltas)"
		}
		return "(empty Deltas)"
	}
	if p, err := metaKeyParts(obj); err == nil {
		return fmt.Sprintf("%q of type %T", p.key(), obj)
	}
	return fmt.Sprintf("of type %T", obj)
}

// redactedError is an error with another text, wrapping the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
