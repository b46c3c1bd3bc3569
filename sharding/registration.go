package sharding

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/openinformer/cache"
)

// shardRegistration is the handle of a handler added to a MembershipInformer.
type shardRegistration struct {
	mi *MembershipInformer
	h  *shardHandler
}

// HasSynced reports whether the handler has received the live generation's initial list.
// Promotion waits for every handler's sync, so once true it stays true.
func (r *shardRegistration) HasSynced() bool {
	r.mi.mu.Lock()
	defer r.mi.mu.Unlock()
	if r.mi.live == nil {
		return false
	}
	reg, ok := r.mi.live.regs[r.h]
	return ok && reg.HasSynced()
}

// HasSyncedChecker is done once HasSynced is true.
func (r *shardRegistration) HasSyncedChecker() cache.DoneChecker {
	return newPollChecker("membership handler "+r.h.name, r.HasSynced, r.mi.stopped)
}

// RemoveEventHandler removes a handler added with AddEventHandlerWithOptions from every
// generation; nothing reaches it afterwards, not even a switch's differences. Removing it
// twice is not an error.
func (mi *MembershipInformer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*shardRegistration)
	if !ok || r.mi != mi {
		return errors.New("membership informer: the registration is not one of this informer's")
	}
	// The handler's lock first (see the package's lock order), and released before the
	// informer's, so a switch under way finishes with it or skips it.
	r.h.mu.Lock()
	r.h.removed = true
	r.h.mu.Unlock()
	mi.mu.Lock()
	defer mi.mu.Unlock()
	return mi.unregisterLocked(r.h)
}

// unregisterLocked removes h from the handlers and from every generation's informer.
func (mi *MembershipInformer) unregisterLocked(h *shardHandler) error {
	mi.handlers = slices.DeleteFunc(mi.handlers, func(o *shardHandler) bool { return o == h })
	var errs []error
	for _, g := range []*shardGeneration{mi.live, mi.pending} {
		if g == nil {
			continue
		}
		if reg, ok := g.regs[h]; ok {
			delete(g.regs, h)
			errs = append(errs, g.informer.RemoveEventHandler(reg))
		}
	}
	return errors.Join(errs...)
}

// HasSyncedChecker is done once HasSynced is true.
func (mi *MembershipInformer) HasSyncedChecker() cache.DoneChecker {
	return newPollChecker("membership informer", mi.HasSynced, mi.stopped)
}

// IsStopped reports whether Run has returned.
func (mi *MembershipInformer) IsStopped() bool {
	select {
	case <-mi.stopped:
		return true
	default:
		return false
	}
}

// AddIndexers adds indexers to the running generations and to every later one.
func (mi *MembershipInformer) AddIndexers(indexers cache.Indexers) error {
	return mi.addIndexers(indexers)
}

// errStarted refuses a setting that every generation must get once Run has begun.
var errStarted = errors.New("membership informer has already started")

// SetTransform sets the transform of every generation's informer; only before Run.
func (mi *MembershipInformer) SetTransform(transform cache.TransformFunc) error {
	return mi.beforeRun(func() { mi.transform = transform })
}

// SetWatchErrorHandlerWithContext sets the watch error handler of every generation's
// informer; only before Run.
func (mi *MembershipInformer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	return mi.beforeRun(func() { mi.watchErrorHandler = handler })
}

// beforeRun applies set under mi.mu unless Run has begun: the generations
// made from then on must all get the same settings.
func (mi *MembershipInformer) beforeRun(set func()) error {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	if mi.started {
		return errStarted
	}
	set()
	return nil
}

// pollChecker is a DoneChecker for a condition that no event signals: the switches between
// generations change what HasSynced consults. Its first Done starts a goroutine that checks
// every shardSyncPoll until the condition holds or the informer stops.
type pollChecker struct {
	name    string
	cond    func() bool
	stopped <-chan struct{}
	once    sync.Once
	done    chan struct{}
}

func newPollChecker(name string, cond func() bool, stopped <-chan struct{}) *pollChecker {
	return &pollChecker{name: name, cond: cond, stopped: stopped, done: make(chan struct{})}
}

// Name identifies what is waited for.
func (c *pollChecker) Name() string { return c.name }

// Done is closed once the condition holds; never, if the informer stops first.
func (c *pollChecker) Done() <-chan struct{} {
	c.once.Do(func() {
		if c.cond() {
			close(c.done)
			return
		}
		go c.poll()
	})
	return c.done
}

func (c *pollChecker) poll() {
	ticker := time.NewTicker(shardSyncPoll)
	defer ticker.Stop()
	for !c.cond() {
		select {
		case <-ticker.C:
		case <-c.stopped:
			return
		}
	}
	close(c.done)
}
