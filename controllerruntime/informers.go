package crcache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-logr/logr"
	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/sharding"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

var log = logf.Log.WithName("crcache")

// defaultSyncPeriod is controller-runtime's resync period when none is set.
const defaultSyncPeriod = 10 * time.Hour

// leafConfig is one leaf cache's controller-runtime settings, resolved:
// its namespace ("" for all) and Config.
type leafConfig struct {
	namespace string
	config    crcache.Config
}

// informerKey identifies an informer within a leaf.
type informerKey struct {
	gvk schema.GroupVersionKind
	rep representation
}

// informerEntry is one running (or to be started) informer.
type informerEntry struct {
	informer cacheInformer
	run      func(context.Context)
	reader   *reader
	name     *cache.InformerName
	names    handlerNames       // of the handlers added through handed
	cancel   context.CancelFunc // set once started; stops this informer alone
}

// handed is the informer as controller-runtime gets it: its handlers are
// named apart (handlernames.go), and a plain informer stays a
// SharedIndexInformer.
func (e *informerEntry) handed() crcache.Informer {
	if m, ok := e.informer.(membershipInformer); ok {
		return m // names its handlers itself
	}
	return namingInformer{SharedIndexInformer: e.informer.(cache.SharedIndexInformer), names: &e.names}
}

// informers is controller-runtime's informer map for one leaf: one
// informer per GVK and representation, all with the leaf's scope.
type informers struct {
	env  *environment
	leaf leafConfig

	mu        sync.Mutex
	entries   map[informerKey]*informerEntry
	ctx       context.Context // the Start context; nil before Start
	started   bool
	stopped   bool
	startWait chan struct{}
	wg        sync.WaitGroup
}

func newInformers(env *environment, leaf leafConfig) *informers {
	return &informers{env: env, leaf: leaf, entries: map[informerKey]*informerEntry{}, startWait: make(chan struct{})}
}

// start runs every informer added so far and every one added later, and
// blocks until ctx ends and all of them have stopped.
func (ip *informers) start(ctx context.Context) error {
	ip.mu.Lock()
	if ip.started {
		ip.mu.Unlock()
		return errors.New("informer already started")
	}
	ip.ctx = logr.NewContext(ctx, log)
	for _, e := range ip.entries {
		ip.runLocked(e)
	}
	ip.started = true
	close(ip.startWait)
	ip.mu.Unlock()

	<-ctx.Done()
	ip.mu.Lock()
	ip.stopped = true
	ip.mu.Unlock()
	ip.wg.Wait()
	return nil
}

// runLocked starts e's informer unless the map is stopping.
func (ip *informers) runLocked(e *informerEntry) {
	if ip.stopped {
		return
	}
	ctx, cancel := context.WithCancel(ip.ctx)
	e.cancel = cancel
	ip.wg.Go(func() {
		defer cancel()
		defer e.name.Release()
		e.run(ctx)
	})
}

// waitForCacheSync waits for Start, then for every informer's sync.
func (ip *informers) waitForCacheSync(ctx context.Context) bool {
	select {
	case <-ip.startWait:
	case <-ctx.Done():
		return false
	}
	ip.mu.Lock()
	synced := make([]cache.InformerSynced, 0, len(ip.entries))
	for _, e := range ip.entries {
		synced = append(synced, e.informer.HasSynced)
	}
	ip.mu.Unlock()
	return cache.WaitForCacheSync(ctx.Done(), synced...)
}

// get returns the informer of (gvk, obj's representation), creating it
// unless failOnMissing, and waits for its sync when block and started.
func (ip *informers) get(ctx context.Context, gvk schema.GroupVersionKind, obj runtime.Object, failOnMissing, block bool) (*informerEntry, bool, error) {
	key := informerKey{gvk: gvk, rep: representationOf(obj)}
	ip.mu.Lock()
	e, ok := ip.entries[key]
	started := ip.started
	if !ok {
		if failOnMissing {
			ip.mu.Unlock()
			return nil, started, &crcache.ErrResourceNotCached{GVK: gvk}
		}
		var err error
		if e, err = ip.addLocked(key, obj); err != nil {
			ip.mu.Unlock()
			return nil, started, err
		}
	}
	ip.mu.Unlock()
	// An informer created by this call has not synced, however fast its
	// first LIST ends: a caller whose ctx is already done gets the timeout
	// controller-runtime gives, not a result that depends on scheduling.
	if block && started && (!ok || !e.informer.HasSynced()) {
		if ctx.Err() != nil || !cache.WaitForCacheSync(ctx.Done(), e.informer.HasSynced) {
			return nil, started, apierrors.NewTimeoutError(fmt.Sprintf("failed waiting for %T Informer to sync", obj), 0)
		}
	}
	return e, started, nil
}

// remove stops and forgets the informer of (gvk, obj's representation).
func (ip *informers) remove(gvk schema.GroupVersionKind, obj runtime.Object) {
	key := informerKey{gvk: gvk, rep: representationOf(obj)}
	ip.mu.Lock()
	defer ip.mu.Unlock()
	e, ok := ip.entries[key]
	if !ok {
		return
	}
	delete(ip.entries, key)
	if e.cancel != nil {
		e.cancel()
	} else {
		e.name.Release()
	}
}

// addLocked builds the informer of key with the leaf's scope and this
// type's openinformer options, and runs it if the map has started.
func (ip *informers) addLocked(key informerKey, obj runtime.Object) (*informerEntry, error) {
	mapping, err := ip.env.mapper.RESTMapping(key.gvk.GroupKind(), key.gvk.Version)
	if err != nil {
		return nil, err
	}
	s := ip.scopeOf(key, mapping)
	lw, err := ip.env.listWatchFor(s)
	if err != nil {
		return nil, err
	}
	ours := ip.env.optionsFor(key.gvk)
	if ours.Shard != nil {
		if lw, err = sharding.NewListWatch(lw, *ours.Shard); err != nil {
			return nil, err
		}
	}
	opts, name, err := ip.informerOptions(s, ours)
	if err != nil {
		return nil, err
	}
	e := &informerEntry{name: name}
	e.informer, e.run, err = newInformer(lw, obj, opts, s, ours, &e.names)
	if err == nil {
		err = ip.configure(e.informer)
	}
	if err != nil {
		name.Release()
		return nil, err
	}
	e.reader = newReader(e.informer.GetIndexer(), key.gvk, mapping.Scope.Name(), ptr.Deref(ip.leaf.config.UnsafeDisableDeepCopy, false), freshReads(ours))
	ip.entries[key] = e
	if ip.started {
		ip.runLocked(e)
	}
	return e, nil
}

// cacheInformer is what the cache needs of an informer: controller-
// runtime's Informer, its indexer for reads, and the settings configure
// makes. A SharedIndexInformer and a MembershipInformer both are.
type cacheInformer interface {
	crcache.Informer
	GetIndexer() cache.Indexer
	SetTransform(cache.TransformFunc) error
	SetWatchErrorHandlerWithContext(cache.WatchErrorHandlerWithContext) error
}

// newInformer builds the informer of scope s and says how to run it: a
// Lease-sharded one, naming its handlers by names, when the type's options
// ask for it, else a plain one.
func newInformer(lw cache.ListerWatcher, obj runtime.Object, opts cache.SharedIndexInformerOptions, s listWatchScope, ours InformerOptions, names *handlerNames) (cacheInformer, func(context.Context), error) {
	if ours.Membership == nil {
		inf := cache.NewSharedIndexInformerWithOptions(lw, obj, opts)
		return inf, inf.RunWithContext, nil
	}
	inf, err := newMembershipInformer(lw, obj, opts, s, *ours.Membership, names)
	if err != nil {
		return nil, nil, err
	}
	return inf, inf.Run, nil
}

// configure sets the leaf's watch error handler and transform.
func (ip *informers) configure(inf cacheInformer) error {
	if h := ip.env.watchErrorHandler; h != nil {
		if err := inf.SetWatchErrorHandlerWithContext(h); err != nil {
			return err
		}
	}
	return inf.SetTransform(ip.leaf.config.Transform)
}

// scopeOf is what key's informer requests from the server.
func (ip *informers) scopeOf(key informerKey, mapping *meta.RESTMapping) listWatchScope {
	c := ip.leaf.config
	s := listWatchScope{gvk: key.gvk, mapping: mapping, rep: key.rep, bookmarks: ptr.Deref(c.EnableWatchBookmarks, true)}
	if c.LabelSelector != nil {
		s.label = c.LabelSelector.String()
	}
	if c.FieldSelector != nil {
		s.field = c.FieldSelector.String()
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		s.namespace = ip.leaf.namespace
		if s.namespace == "" && c.FieldSelector != nil && !c.FieldSelector.Empty() {
			// A selector on one namespace is a namespaced request.
			s.namespace, _ = c.FieldSelector.RequiresExactMatch("metadata.namespace")
		}
	}
	return s
}

// informerOptions are the SharedIndexInformerOptions of one informer.
func (ip *informers) informerOptions(s listWatchScope, o InformerOptions) (cache.SharedIndexInformerOptions, *cache.InformerName, error) {
	snap, err := snapshotOptions(ip.env.ours.SnapshotDir, s, o, ip.env.ours.SnapshotMetrics)
	if err != nil {
		return cache.SharedIndexInformerOptions{}, nil, err
	}
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	if o.Compact != nil {
		indexers[labelIndex] = labelIndexFunc
	}
	name := ip.env.names.reserve(s)
	return cache.SharedIndexInformerOptions{
		ResyncPeriod:                      jittered(ptr.Deref(ip.leaf.config.SyncPeriod, defaultSyncPeriod)),
		Indexers:                          indexers,
		Identifier:                        name.WithResource(s.mapping.Resource),
		InformerMetricsProvider:           ip.env.ours.InformerMetrics,
		HandlerMetricsProvider:            ip.env.ours.HandlerMetrics,
		MaxPendingNotificationsPerHandler: o.MaxPendingNotificationsPerHandler,
		SlowHandlerThreshold:              o.SlowHandlerThreshold,
		StripManagedFields:                o.StripManagedFields,
		Compact:                           o.Compact,
		Snapshot:                          snap,
	}, name, nil
}

// jittered spreads resyncs over [0.9, 1.1) of the period, as controller-
// runtime does, so that informers do not resync in lock step.
func jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + rand.Float64()/5))
}
