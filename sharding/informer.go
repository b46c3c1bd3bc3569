package sharding

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache"
	"github.com/openinformer/cache/internal/handlername"
)

// shardSyncPoll is how often a starting generation's sync is checked; it adds at most this
// much to a handover.
const shardSyncPoll = 100 * time.Millisecond

// MembershipInformer is an informer whose shard follows a Membership. A shard the Membership
// hands out that adds hashes gets its own informer on a ListWatch (a generation); the
// previous generation keeps serving reads and handlers until the new one has synced, then
// stops (make before break), so a handover adds no ownership gap beyond the new informer's
// sync time. A shard within the newest generation's (the shrink at the end of a handover, or
// a range inside the old one) narrows that generation instead, without a new list: each
// membership change costs at most one full list. A narrowing that drops hashes waits as long
// as this replica's latest sync took, since the replicas taking them over must sync first.
//
// Handlers added with AddEventHandler survive the switches: they see the live generation's
// notifications, and at a switch the difference between what they saw and the new
// generation's cache: an add for every object gained, an update for every object whose
// version moved on, and a delete with a DeletedFinalStateUnknown for every object the new
// generation does not hold; a narrowing likewise deletes every object left outside. Such a
// delete means either that the object left the server or that it moved to another replica's
// shard, which handles it from now on;
// ListWatch().Owns(tombstone.Obj) is false for the second. So a handler's view always
// follows the store, as with a plain informer. To compute the difference each handler keeps
// the key and latest object of everything it was told about.
type MembershipInformer struct {
	base       cache.ListerWatcher
	example    runtime.Object
	options    cache.SharedIndexInformerOptions // of every generation, but for Indexers
	membership *Membership
	shards     chan Shard    // the latest shard handed out, not yet started
	emptyStore cache.Indexer // what reads see before the first generation exists
	stopped    chan struct{} // closed when Run returns

	mu                sync.Mutex     // guards the fields below; never held while a handler runs
	indexers          cache.Indexers // for every later generation, including those added at run time
	transform         cache.TransformFunc
	watchErrorHandler cache.WatchErrorHandlerWithContext
	started           bool
	live              *shardGeneration
	pending           *shardGeneration
	handlers          []*shardHandler
	lastID            uint64

	syncTook atomic.Int64       // how long the latest generation took to sync, in nanoseconds
	deferred *deferredNarrowing // owned by Run's goroutine
}

// deferredNarrowing is a narrowing that drops hashes, waiting until timer fires: the replicas
// taking those hashes over must first sync them, which can outlast the Handover on a loaded
// machine, so the narrowing waits as long as this replica's latest sync took.
type deferredNarrowing struct {
	g     *shardGeneration
	shard Shard
	timer *time.Timer
}

// shardGeneration is one informer on one shard.
type shardGeneration struct {
	id       uint64
	lw       *ListWatch
	informer cache.SharedIndexInformer
	regs     map[*shardHandler]cache.ResourceEventHandlerRegistration // guarded by MembershipInformer.mu
	synced   chan struct{}                                            // closed once informer and regs have synced
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	// narrowed is set once the shard has narrowed: until then every object the informer
	// passes on is owned, and owns need not hash it.
	narrowed  atomic.Bool
	sweepOnce sync.Once // adds the shardSweeper at the first narrowing
}

// shardSweeper removes from a narrowed generation's cache each object its shard no longer
// owns. As a handler it sees every object written, which catches the events that had passed
// the ListerWatcher just before it narrowed. Objects never change shard, so removing one
// never loses an owned version of it.
type shardSweeper struct{ g *shardGeneration }

func (s shardSweeper) OnAdd(obj any, _ bool)  { s.sweep(obj) }
func (s shardSweeper) OnUpdate(_, newObj any) { s.sweep(newObj) }
func (s shardSweeper) OnDelete(any)           {}
func (s shardSweeper) sweep(obj any) {
	if !s.g.owns(obj) {
		_ = s.g.informer.GetIndexer().Delete(obj) // keyed as it was stored, so it cannot fail
	}
}

// owns reports whether obj, or the object a tombstone carries, belongs to g's current shard.
func (g *shardGeneration) owns(obj any) bool {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(runtime.Object)
	return !ok || !g.narrowed.Load() || g.lw.Owns(o)
}

// NewMembershipInformer returns an informer on lw whose shard follows the Membership built
// from membership, which must leave OnChange nil: the informer sets it. exampleObject, resync
// and indexers are those of NewSharedIndexInformer.
func NewMembershipInformer(lw cache.ListerWatcher, exampleObject runtime.Object, resync time.Duration, indexers cache.Indexers, membership MembershipOptions) (*MembershipInformer, error) {
	return NewMembershipInformerWithOptions(lw, exampleObject, cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers}, membership)
}

// NewMembershipInformerWithOptions is NewMembershipInformer with every generation's informer
// built from options, as NewSharedIndexInformerWithOptions builds one: compact storage,
// stripped managed fields, bounded handler backlogs and metrics carry over to each new shard.
// The generations share options.Identifier, so their metrics keep one series; while a
// handover runs, the two generations report into it in turn.
//
// options.ShardSelector is refused, since the Membership picks the shard, and so is
// options.Snapshot: a snapshot's Version is fixed when the informer is built while the
// generation's shard narrows at run time, so a snapshot could not say which range it holds,
// and one range's snapshot must never be resumed for another.
func NewMembershipInformerWithOptions(lw cache.ListerWatcher, exampleObject runtime.Object, options cache.SharedIndexInformerOptions, membership MembershipOptions) (*MembershipInformer, error) {
	if lw == nil {
		return nil, errors.New("membership informer: nil ListerWatcher")
	}
	if membership.OnChange != nil {
		return nil, errors.New("membership informer: leave MembershipOptions.OnChange nil, the informer sets it")
	}
	if options.ShardSelector != nil {
		return nil, errors.New("membership informer: leave ShardSelector nil, the Membership picks the shard")
	}
	if options.Snapshot != nil {
		return nil, errors.New("membership informer: snapshots are not supported, the shard changes at run time")
	}
	indexers := maps.Clone(options.Indexers)
	options.Indexers = nil
	mi := &MembershipInformer{base: lw, example: exampleObject, options: options, indexers: indexers,
		shards: make(chan Shard, 1), stopped: make(chan struct{}),
		emptyStore: cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})}
	membership.OnChange = mi.offer
	m, err := NewMembership(membership)
	if err != nil {
		return nil, err
	}
	mi.membership = m
	return mi, nil
}

// offer replaces any shard not yet started with s. Membership calls it from one goroutine,
// so after the drain the send never blocks.
func (mi *MembershipInformer) offer(s Shard) {
	select {
	case <-mi.shards:
	default:
	}
	mi.shards <- s
}

// Run takes part in the Membership and runs the informers until ctx ends, then leaves the
// group, keeps serving its shard through the Membership's handover, stops its informers and
// returns. Call it once.
func (mi *MembershipInformer) Run(ctx context.Context) {
	mi.mu.Lock()
	mi.started = true
	mi.mu.Unlock()
	defer close(mi.stopped)
	membershipDone := make(chan struct{})
	go func() {
		defer close(membershipDone)
		mi.membership.Run(ctx)
	}()
	// The informers outlive ctx by the handover, but keep its logger and values.
	informerCtx := context.WithoutCancel(ctx)
	defer mi.stopAll()
	for {
		var synced <-chan struct{}
		if p := mi.pendingGeneration(); p != nil {
			synced = p.synced
		}
		var narrowDue <-chan time.Time
		if mi.deferred != nil {
			narrowDue = mi.deferred.timer.C
		}
		select {
		case shard := <-mi.shards:
			mi.begin(informerCtx, shard)
		case <-synced:
			mi.promote()
		case <-narrowDue:
			d := mi.deferred
			mi.deferred = nil
			mi.narrow(d.g, d.shard)
		case <-membershipDone:
			return
		}
	}
}

func (mi *MembershipInformer) pendingGeneration() *shardGeneration {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	return mi.pending
}

func (mi *MembershipInformer) newestGeneration() *shardGeneration {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	return cmp.Or(mi.pending, mi.live)
}

// narrowSoon narrows g to shard now when that drops no hash, else after the latest sync time
// (see deferredNarrowing).
func (mi *MembershipInformer) narrowSoon(g *shardGeneration, shard Shard) {
	wait := time.Duration(mi.syncTook.Load())
	if wait <= 0 || shard.covers(g.lw.shard()) {
		mi.narrow(g, shard)
		return
	}
	mi.deferred = &deferredNarrowing{g: g, shard: shard, timer: time.NewTimer(wait)}
}

func (mi *MembershipInformer) cancelDeferredNarrowing() {
	if mi.deferred != nil {
		mi.deferred.timer.Stop()
		mi.deferred = nil
	}
}

// narrow restricts generation g to shard, which it covers, without a new list: its
// ListerWatcher drops everything outside shard from now on, each handler is told (or, for a
// pending g, forgets) the objects left outside, they leave g's cache, and a sweeper removes
// those that were already on their way into it.
func (mi *MembershipInformer) narrow(g *shardGeneration, shard Shard) {
	if err := g.lw.narrow(shard); err != nil { // Membership hands out only valid shards
		klog.Background().Error(err, "Membership informer: keeping the previous shard")
		return
	}
	g.narrowed.Store(true)
	mi.mu.Lock()
	handlers := slices.Clone(mi.handlers)
	mi.mu.Unlock()
	for _, h := range handlers {
		h.narrow(g)
	}
	sweeper := shardSweeper{g}
	for _, obj := range g.informer.GetIndexer().List() {
		sweeper.sweep(obj)
	}
	g.sweepOnce.Do(func() {
		_, err := g.informer.AddEventHandler(sweeper)
		if err != nil { // only a stopped informer refuses, and a stopped one holds nothing more
			klog.Background().V(4).Info("Membership informer: not sweeping a stopped generation", "err", err)
		}
	})
}

// begin moves to shard: by narrowing the newest generation when that already holds every
// hash of shard (the shrink at the end of a handover, or a range within the old one), else by
// starting a generation on it. The first generation serves at once; a later one waits in
// pending for its sync, replacing a pending one that had not synced yet.
func (mi *MembershipInformer) begin(ctx context.Context, shard Shard) {
	mi.cancelDeferredNarrowing() // shard supersedes it
	if g := mi.newestGeneration(); g != nil && g.lw.shard().covers(shard) {
		mi.narrowSoon(g, shard)
		return
	}
	slw, err := NewListWatch(mi.base, shard)
	if err != nil { // Membership hands out only valid shards
		klog.FromContext(ctx).Error(err, "Membership informer: keeping the previous shard")
		return
	}
	mi.mu.Lock()
	mi.lastID++
	g := &shardGeneration{id: mi.lastID, lw: slw, synced: make(chan struct{}),
		informer: mi.newInformerLocked(ctx, slw), regs: map[*shardHandler]cache.ResourceEventHandlerRegistration{}}
	handlers := slices.Clone(mi.handlers)
	for _, h := range handlers {
		if err := h.register(g); err != nil { // the informer has not started: cannot happen
			klog.FromContext(ctx).Error(err, "Membership informer: adding a handler")
		}
	}
	replaced, first := mi.pending, mi.live == nil
	if first {
		mi.live = g
	} else {
		mi.pending = g
	}
	mi.mu.Unlock()
	for _, h := range handlers {
		h.expect(g.id, first)
	}
	if replaced != nil {
		replaced.stop()
	}
	g.start(ctx, func() bool { return mi.generationSynced(g) }, func(took time.Duration) { mi.syncTook.Store(int64(took)) })
}

// newInformerLocked builds a generation's informer on lw with the informer's options,
// indexers, transform and watch error handler. The setters cannot fail on an informer that
// has not started.
func (mi *MembershipInformer) newInformerLocked(ctx context.Context, lw cache.ListerWatcher) cache.SharedIndexInformer {
	options := mi.options
	options.Indexers = maps.Clone(mi.indexers)
	inf := cache.NewSharedIndexInformerWithOptions(lw, mi.example, options)
	err := inf.SetTransform(mi.transform)
	if mi.watchErrorHandler != nil {
		err = errors.Join(err, inf.SetWatchErrorHandlerWithContext(mi.watchErrorHandler))
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Membership informer: configuring a generation")
	}
	return inf
}

// promote makes the synced pending generation the live one, brings every handler up to its
// cache, and stops the previous generation.
func (mi *MembershipInformer) promote() {
	mi.mu.Lock()
	old, g := mi.live, mi.pending
	mi.live, mi.pending = g, nil
	handlers := slices.Clone(mi.handlers)
	mi.mu.Unlock()
	for _, h := range handlers {
		h.promote(g.id)
	}
	old.stop()
}

func (mi *MembershipInformer) stopAll() {
	mi.cancelDeferredNarrowing()
	mi.mu.Lock()
	live, pending := mi.live, mi.pending
	mi.mu.Unlock()
	for _, g := range []*shardGeneration{pending, live} {
		if g != nil {
			g.stop()
		}
	}
}

func (mi *MembershipInformer) generationSynced(g *shardGeneration) bool {
	mi.mu.Lock()
	regs := slices.Collect(maps.Values(g.regs))
	mi.mu.Unlock()
	if !g.informer.HasSynced() {
		return false
	}
	for _, r := range regs {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

// start runs the generation's informer and closes synced once it and its handlers have synced,
// telling tookToSync how long that took.
func (g *shardGeneration) start(ctx context.Context, hasSynced func() bool, tookToSync func(time.Duration)) {
	ctx, g.cancel = context.WithCancel(ctx)
	began := time.Now()
	g.wg.Go(func() { g.informer.RunWithContext(ctx) })
	g.wg.Go(func() {
		err := wait.PollUntilContextCancel(ctx, shardSyncPoll, true, func(context.Context) (bool, error) { return hasSynced(), nil })
		if err == nil {
			tookToSync(time.Since(began))
			close(g.synced)
		}
	})
}

func (g *shardGeneration) stop() {
	g.cancel()
	g.wg.Wait()
}

// AddEventHandler adds a handler that receives the live generation's notifications, and the
// differences described on MembershipInformer at each switch. A handler added after the first
// generation started first receives an add for each object the live generation holds.
func (mi *MembershipInformer) AddEventHandler(handler cache.ResourceEventHandler) error {
	_, err := mi.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
	return err
}

// AddEventHandlerWithOptions is AddEventHandler with options, which every generation's
// registration of the handler gets. The registration it returns has synced once the handler
// has received the live generation's initial list, and removes the handler from every
// generation with RemoveEventHandler.
func (mi *MembershipInformer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if handlername.Nil(handler, "OnAdd") {
		return nil, errors.New("membership informer: nil handler")
	}
	h := &shardHandler{handler: handler, name: handlerName(handler), options: options, view: map[string]any{}}
	mi.mu.Lock()
	defer mi.mu.Unlock()
	// h is not shared yet, so its fields are set without its lock.
	for _, g := range []*shardGeneration{mi.live, mi.pending} {
		if g == nil {
			continue
		}
		if g == mi.live {
			h.live = g.id
		} else {
			h.next, h.nextView = g.id, map[string]any{}
		}
		if err := h.register(g); err != nil {
			mi.unregisterLocked(h)
			return nil, err
		}
	}
	mi.handlers = append(mi.handlers, h)
	return &shardRegistration{mi: mi, h: h}, nil
}

// HasSynced reports whether a generation serves reads and its informer and every handler
// have received its initial list.
func (mi *MembershipInformer) HasSynced() bool {
	mi.mu.Lock()
	g := mi.live
	mi.mu.Unlock()
	return g != nil && mi.generationSynced(g)
}

// ListWatch returns the live generation's ListerWatcher, whose Selector and Mode
// describe the shard being served, or nil before the first shard arrives.
func (mi *MembershipInformer) ListWatch() *ListWatch {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	if mi.live == nil {
		return nil
	}
	return mi.live.lw
}

// GetIndexer returns an Indexer that reads the live generation's cache, whichever that is
// when it is called: listers built on it once keep following the shard. Indexers added
// through it apply to later generations too.
func (mi *MembershipInformer) GetIndexer() cache.Indexer { return liveIndexer{mi} }

// GetStore returns GetIndexer as a Store.
func (mi *MembershipInformer) GetStore() cache.Store { return liveIndexer{mi} }

func (mi *MembershipInformer) liveIndexer() cache.Indexer {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	if mi.live == nil {
		return mi.emptyStore
	}
	return mi.live.informer.GetIndexer()
}

// addIndexers records indexers for later generations and adds them to the running ones.
func (mi *MembershipInformer) addIndexers(indexers cache.Indexers) error {
	mi.mu.Lock()
	defer mi.mu.Unlock()
	var errs []error
	for _, g := range []*shardGeneration{mi.live, mi.pending} {
		if g != nil {
			errs = append(errs, g.informer.AddIndexers(indexers))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if mi.indexers == nil {
		mi.indexers = cache.Indexers{}
	}
	maps.Copy(mi.indexers, indexers)
	return nil
}
