package crcache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	cache "github.com/openinformer/cache"
	"golang.org/x/sync/errgroup"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// clusterScopeKey names the cluster-scoped leaf among a multiNamespace's
// informers, as controller-runtime does.
const clusterScopeKey = "_cluster-scope"

// multiNamespace is a cache of several namespaces, one leaf each, plus an
// optional leaf for cluster-scoped types.
type multiNamespace struct {
	env     *environment
	byNS    map[string]crcache.Cache
	cluster crcache.Cache // nil: cluster-scoped types are not cached here
}

var _ crcache.Cache = &multiNamespace{}

func newMultiNamespace(env *environment, namespaces map[string]crcache.Config, global *crcache.Config) *multiNamespace {
	m := &multiNamespace{env: env, byNS: make(map[string]crcache.Cache, len(namespaces))}
	for ns, c := range namespaces {
		m.byNS[ns] = newLeaf(env, c, ns)
	}
	if global != nil {
		m.cluster = newLeaf(env, *global, metav1.NamespaceAll)
	}
	return m
}

// namespaced reports whether obj's type is namespaced.
func (m *multiNamespace) namespaced(obj runtime.Object) (bool, error) {
	return apiutil.IsObjectNamespaced(obj, m.env.scheme, m.env.mapper)
}

// GetInformer implements crcache.Informers.
func (m *multiNamespace) GetInformer(ctx context.Context, obj client.Object, opts ...crcache.InformerGetOption) (crcache.Informer, error) {
	namespaced, err := m.namespaced(obj)
	if err != nil {
		return nil, err
	}
	return m.fanInformer(namespaced, func(c crcache.Cache) (crcache.Informer, error) { return c.GetInformer(ctx, obj, opts...) })
}

// GetInformerForKind implements crcache.Informers.
func (m *multiNamespace) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...crcache.InformerGetOption) (crcache.Informer, error) {
	namespaced, err := apiutil.IsGVKNamespaced(gvk, m.env.mapper)
	if err != nil {
		return nil, err
	}
	return m.fanInformer(namespaced, func(c crcache.Cache) (crcache.Informer, error) { return c.GetInformerForKind(ctx, gvk, opts...) })
}

// fanInformer gets the informer of every namespace's leaf, or the
// cluster leaf's, as one informer.
func (m *multiNamespace) fanInformer(namespaced bool, get func(crcache.Cache) (crcache.Informer, error)) (crcache.Informer, error) {
	if !namespaced {
		if m.cluster == nil {
			return nil, errNoClusterCache
		}
		inf, err := get(m.cluster)
		if err != nil {
			return nil, err
		}
		return fanout{clusterScopeKey: inf}, nil
	}
	out := make(fanout, len(m.byNS))
	for ns, c := range m.byNS {
		inf, err := get(c)
		if err != nil {
			return nil, err
		}
		out[ns] = inf
	}
	return out, nil
}

// errNoClusterCache is returned for a cluster-scoped type in a cache
// built for ByObject namespaces, which has no cluster leaf.
var errNoClusterCache = errors.New("cluster-scoped type in a namespaced cache")

// RemoveInformer implements crcache.Informers.
func (m *multiNamespace) RemoveInformer(ctx context.Context, obj client.Object) error {
	return m.each(obj, func(c crcache.Cache) error { return c.RemoveInformer(ctx, obj) })
}

// IndexField implements client.FieldIndexer.
func (m *multiNamespace) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	return m.each(obj, func(c crcache.Cache) error { return c.IndexField(ctx, obj, field, extract) })
}

// each runs f on the cluster leaf for a cluster-scoped obj, else on every
// namespace's leaf, stopping at the first error.
func (m *multiNamespace) each(obj runtime.Object, f func(crcache.Cache) error) error {
	namespaced, err := m.namespaced(obj)
	if err != nil {
		return err
	}
	if !namespaced {
		if m.cluster == nil {
			return errNoClusterCache
		}
		return f(m.cluster)
	}
	for _, c := range m.byNS {
		if err := f(c); err != nil {
			return err
		}
	}
	return nil
}

// Start implements crcache.Informers.
func (m *multiNamespace) Start(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	if m.cluster != nil {
		g.Go(func() error { return m.cluster.Start(gctx) })
	}
	for ns, c := range m.byNS {
		g.Go(func() error {
			if err := c.Start(gctx); err != nil {
				return fmt.Errorf("failed to start cache for namespace %s: %w", ns, err)
			}
			return nil
		})
	}
	return ignoreCanceled(g.Wait())
}

// ignoreCanceled treats a cancelled context as a clean stop.
func ignoreCanceled(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// WaitForCacheSync implements crcache.Informers.
func (m *multiNamespace) WaitForCacheSync(ctx context.Context) bool {
	synced := true
	for _, c := range m.byNS {
		if !c.WaitForCacheSync(ctx) {
			synced = false
		}
	}
	if m.cluster != nil && !m.cluster.WaitForCacheSync(ctx) {
		synced = false
	}
	return synced
}

// Get implements client.Reader.
func (m *multiNamespace) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	namespaced, err := m.namespaced(obj)
	if err != nil {
		return err
	}
	if !namespaced {
		if m.cluster == nil {
			return errNoClusterCache
		}
		return m.cluster.Get(ctx, key, obj)
	}
	c, ok := m.leafOf(key.Namespace)
	if !ok {
		return fmt.Errorf("unable to get: %v because of unknown namespace for the cache", key)
	}
	return c.Get(ctx, key, obj, opts...)
}

// leafOf is the leaf of namespace, or the all-namespaces leaf.
func (m *multiNamespace) leafOf(namespace string) (crcache.Cache, bool) {
	if c, ok := m.byNS[namespace]; ok {
		return c, true
	}
	c, ok := m.byNS[metav1.NamespaceAll]
	return c, ok
}

// List implements client.Reader: one namespace's leaf, or every leaf
// concatenated when no namespace is given.
func (m *multiNamespace) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := client.ListOptions{}
	o.ApplyOptions(opts)
	if o.Continue != "" {
		return fmt.Errorf("continue list option is not supported by the cache")
	}
	namespaced, err := m.namespaced(list)
	if err != nil {
		return err
	}
	if !namespaced {
		if m.cluster == nil {
			return errNoClusterCache
		}
		return m.cluster.List(ctx, list, opts...)
	}
	if o.Namespace != metav1.NamespaceAll {
		c, ok := m.leafOf(o.Namespace)
		if !ok {
			return fmt.Errorf("unable to list: %v because of unknown namespace for the cache", o.Namespace)
		}
		return c.List(ctx, list, opts...)
	}
	return m.listAll(ctx, list, o)
}

func (m *multiNamespace) listAll(ctx context.Context, list client.ObjectList, o client.ListOptions) error {
	acc, err := apimeta.ListAccessor(list)
	if err != nil {
		return err
	}
	var all []runtime.Object
	var rv string
	for _, c := range m.byNS {
		part := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, part, &o); err != nil {
			return err
		}
		items, err := apimeta.ExtractList(part)
		if err != nil {
			return err
		}
		all = append(all, items...)
		rv = part.GetResourceVersion()
		if o.Limit > 0 {
			if o.Limit -= int64(len(items)); o.Limit == 0 {
				break
			}
		}
	}
	acc.SetResourceVersion(rv)
	if all == nil {
		all = []runtime.Object{}
	}
	if err := apimeta.SetList(list, all); err != nil {
		return err
	}
	list.SetContinue("continue-not-supported")
	return nil
}

// fanout is one informer per namespace seen as one: handlers and indexes
// go to each, and it has synced when all have.
type fanout map[string]crcache.Informer

var _ crcache.Informer = fanout{}

// AddEventHandler implements crcache.Informer.
func (f fanout) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return f.register(func(i crcache.Informer) (cache.ResourceEventHandlerRegistration, error) { return i.AddEventHandler(h) })
}

// AddEventHandlerWithResyncPeriod implements crcache.Informer.
func (f fanout) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, d time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return f.register(func(i crcache.Informer) (cache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithResyncPeriod(h, d)
	})
}

// AddEventHandlerWithOptions implements crcache.Informer.
func (f fanout) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return f.register(func(i crcache.Informer) (cache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithOptions(h, o)
	})
}

func (f fanout) register(add func(crcache.Informer) (cache.ResourceEventHandlerRegistration, error)) (cache.ResourceEventHandlerRegistration, error) {
	regs := make(fanoutRegistration, len(f))
	for ns, i := range f {
		r, err := add(i)
		if err != nil {
			return nil, err
		}
		regs[ns] = r
	}
	return regs, nil
}

// RemoveEventHandler implements crcache.Informer.
func (f fanout) RemoveEventHandler(h cache.ResourceEventHandlerRegistration) error {
	regs, ok := h.(fanoutRegistration)
	if !ok {
		return fmt.Errorf("registration is not a registration returned by multiNamespaceInformer")
	}
	for ns, i := range f {
		if r, ok := regs[ns]; ok {
			if err := i.RemoveEventHandler(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// AddIndexers implements crcache.Informer.
func (f fanout) AddIndexers(indexers cache.Indexers) error {
	for _, i := range f {
		if err := i.AddIndexers(indexers); err != nil {
			return err
		}
	}
	return nil
}

// HasSynced implements crcache.Informer.
func (f fanout) HasSynced() bool { return every(f, crcache.Informer.HasSynced) }

// IsStopped implements crcache.Informer.
func (f fanout) IsStopped() bool { return every(f, crcache.Informer.IsStopped) }

// HasSyncedChecker implements crcache.Informer.
func (f fanout) HasSyncedChecker() cache.DoneChecker {
	return allCheckers(f, crcache.Informer.HasSyncedChecker)
}

// every reports whether pred holds for every namespace's value.
func every[T any](m map[string]T, pred func(T) bool) bool {
	for _, v := range m {
		if !pred(v) {
			return false
		}
	}
	return true
}

// allCheckers is done when every namespace's checker is.
func allCheckers[T any](m map[string]T, checker func(T) cache.DoneChecker) cache.DoneChecker {
	checkers := make(map[string]cache.DoneChecker, len(m))
	for ns, v := range m {
		checkers[ns] = checker(v)
	}
	return newAllDone(checkers)
}

// fanoutRegistration is one handler's registration on every namespace.
type fanoutRegistration map[string]cache.ResourceEventHandlerRegistration

// HasSynced implements cache.ResourceEventHandlerRegistration.
func (r fanoutRegistration) HasSynced() bool {
	return every(r, cache.ResourceEventHandlerRegistration.HasSynced)
}

// HasSyncedChecker implements cache.ResourceEventHandlerRegistration.
func (r fanoutRegistration) HasSyncedChecker() cache.DoneChecker {
	return allCheckers(r, cache.ResourceEventHandlerRegistration.HasSyncedChecker)
}

// allDone is done when every checker is.
type allDone struct {
	checkers map[string]cache.DoneChecker
	once     sync.Once
	done     chan struct{}
}

func newAllDone(checkers map[string]cache.DoneChecker) *allDone {
	return &allDone{checkers: checkers, done: make(chan struct{})}
}

// Name lists each namespace's checker.
func (a *allDone) Name() string {
	names := make([]string, 0, len(a.checkers))
	for _, ns := range slices.Sorted(maps.Keys(a.checkers)) {
		names = append(names, ns+": "+a.checkers[ns].Name())
	}
	return strings.Join(names, ", ")
}

// Done closes once every checker is done: at once when they already are
// (so that a checker asked for again after a sync reports done), else
// from a goroutine started on the first call, which ends then; callers
// that stop waiting leave it parked on a checker that never finishes, as
// client-go's own checkers do.
func (a *allDone) Done() <-chan struct{} {
	a.once.Do(func() {
		if a.allClosed() {
			close(a.done)
			return
		}
		go func() {
			for _, c := range a.checkers {
				<-c.Done()
			}
			close(a.done)
		}()
	})
	return a.done
}

// allClosed reports whether every checker is done already.
func (a *allDone) allClosed() bool {
	for _, c := range a.checkers {
		select {
		case <-c.Done():
		default:
			return false
		}
	}
	return true
}
