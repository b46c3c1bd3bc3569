package cache

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openinformer/cache/internal/keyparts"
	"github.com/openinformer/cache/internal/lru"
	"github.com/openinformer/cache/internal/objmeta"
)

// MutationCache lets a controller read its own writes before the informer
// has seen them. Objects the controller wrote (Mutation) or saw deleted
// (OnDelete) are remembered for a while and shown in place of the informer's
// copy as long as their resource version is newer.
//
// The interface has an unexported method so that only this package
// implements it and methods can be added later without breaking anyone.
type MutationCache interface {
	// GetByKey returns the newest known version of the object under key.
	GetByKey(key string) (interface{}, bool, error)
	// ByIndex returns the newest known versions of the objects whose index
	// indexName has the value indexKey.
	ByIndex(indexName, indexKey string) ([]interface{}, error)
	// Mutation records an object the caller has just written.
	Mutation(interface{})
	// OnAddOrUpdate tells the cache the informer saw obj, so older local
	// writes can be forgotten.
	OnAddOrUpdate(obj runtime.Object)
	// OnDelete tells the cache the informer saw obj deleted.
	OnDelete(obj runtime.Object)

	mutationCacheOnly()
}

// Defaults of NewIntegerResourceVersionMutationCacheWithOptions.
const (
	defaultMutationCacheSize = 100
	defaultMutationCacheTTL  = 5 * time.Minute
)

// NewIntegerResourceVersionMutationCache returns a MutationCache that keeps
// up to 100 local writes for ttl and compares resource versions as unsigned
// integers. indexer (optional) serves ByIndex; with includeAdds, objects the
// backing cache has never seen are returned as well.
func NewIntegerResourceVersionMutationCache(logger klog.Logger, backingCache Store, indexer Indexer, ttl time.Duration, includeAdds bool) MutationCache {
	return NewIntegerResourceVersionMutationCacheWithOptions(logger, backingCache, MutationCacheOptions{
		Indexer:      indexer,
		TTL:          ttl,
		IncludeAdds:  includeAdds,
		MaxCacheSize: defaultMutationCacheSize,
	})
}

// NewIntegerResourceVersionMutationCacheWithOptions is
// NewIntegerResourceVersionMutationCache with options; a zero TTL means
// 5 minutes and a MaxCacheSize of zero or less means 100.
func NewIntegerResourceVersionMutationCacheWithOptions(logger klog.Logger, backingCache Store, options MutationCacheOptions) MutationCache {
	return newMutationCacheWithClock(logger, backingCache, options, clock.RealClock{})
}

func newMutationCacheWithClock(logger klog.Logger, backingCache Store, options MutationCacheOptions, clk clock.PassiveClock) *mutationCache {
	size, ttl := options.MaxCacheSize, options.TTL
	if size <= 0 {
		size = defaultMutationCacheSize
	}
	if ttl == 0 {
		ttl = defaultMutationCacheTTL
	}
	return &mutationCache{
		logger:      logger,
		backing:     backingCache,
		indexer:     options.Indexer,
		includeAdds: options.IncludeAdds,
		ttl:         ttl,
		recent:      lru.New(size, clk),
	}
}

type mutationCache struct {
	logger      klog.Logger
	backing     Store
	indexer     Indexer
	includeAdds bool
	ttl         time.Duration

	lock   sync.Mutex
	recent *lru.LRU
}

func (c *mutationCache) mutationCacheOnly() {}

// GetByKey prefers a newer local write over the backing copy. Unlike
// client-go, an object deleted locally is reported absent rather than
// returned as an internal tombstone value.
func (c *mutationCache) GetByKey(key string) (interface{}, bool, error) {
	c.lock.Lock()
	defer c.lock.Unlock()

	obj, exists, err := c.backing.GetByKey(key)
	if err != nil {
		return nil, false, err
	}
	if !exists {
		obj, exists = c.unseenLocked(key)
	} else {
		obj, exists = c.newestLocked(key, obj)
	}
	return obj, exists, nil
}

// unseenLocked returns a local write the backing cache has not seen yet,
// when the cache was asked to expose such writes.
func (c *mutationCache) unseenLocked(key string) (interface{}, bool) {
	if !c.includeAdds {
		return nil, false
	}
	obj, ok := c.recent.Get(key)
	if !ok || isMutationTombstone(obj) {
		return nil, false
	}
	return obj, true
}

// newestLocked returns the newer of backing and the local write under key,
// forgetting the local write once the backing cache has caught up.
func (c *mutationCache) newestLocked(key string, backing interface{}) (interface{}, bool) {
	backingObj, ok := backing.(runtime.Object)
	if !ok {
		return backing, true
	}
	local, ok := c.recent.Get(key)
	if !ok {
		return backing, true
	}
	localObj, ok := local.(runtime.Object)
	if !ok {
		return backing, true
	}
	if c.compareLocked(backingObj, localObj, "the backing copy") >= 0 {
		c.recent.Remove(key)
		return backing, true
	}
	if isMutationTombstone(localObj) {
		return nil, false
	}
	return localObj, true
}

// ByIndex lists the indexer's matches, each replaced by a newer local write
// if there is one, plus (with includeAdds) local writes the indexer has not
// seen that match too.
func (c *mutationCache) ByIndex(indexName, indexKey string) ([]interface{}, error) {
	c.lock.Lock()
	defer c.lock.Unlock()
	if c.indexer == nil {
		return nil, fmt.Errorf("no indexer has been provided to the mutation cache")
	}
	keys, err := c.indexer.IndexKeys(indexName, indexKey)
	if err != nil {
		return nil, err
	}
	var items []interface{}
	seen := make(map[string]struct{}, len(keys))
	for _, key := range keys {
		if !clientGoV038 {
			seen[key] = struct{}{} // v0.37: even a key the indexer has no object for
		}
		obj, exists, err := c.indexer.GetByKey(key)
		if err != nil {
			return nil, err
		}
		if !exists {
			continue
		}
		// v0.38: only keys the indexer returned an object for hide the
		// local writes, so one it indexes but no longer holds can come
		// from the local writes below.
		seen[key] = struct{}{}
		if obj, exists = c.newestLocked(key, obj); exists {
			items = append(items, obj)
		}
	}
	if c.includeAdds {
		items = c.appendUnseenLocked(items, seen, indexName, indexKey)
	}
	return items, nil
}

// appendUnseenLocked appends local writes, oldest first, that are not in
// seen and whose index indexName includes indexKey.
func (c *mutationCache) appendUnseenLocked(items []interface{}, seen map[string]struct{}, indexName, indexKey string) []interface{} {
	indexFunc := c.indexer.GetIndexers()[indexName]
	if indexFunc == nil {
		return items
	}
	for _, key := range c.recent.KeysOldestFirst() {
		if _, ok := seen[key]; ok {
			continue
		}
		obj, ok := c.recent.Get(key)
		if !ok || isMutationTombstone(obj) {
			continue
		}
		values, err := indexFunc(obj)
		if err != nil {
			c.logger.V(4).Info("Unable to calculate an index entry for mutation cache entry", "key", key, "err", err)
			continue
		}
		for _, v := range values {
			if v == indexKey {
				items = append(items, obj)
				break
			}
		}
	}
	return items
}

// Mutation remembers obj unless a newer local write (or the deletion of the
// same object) is already remembered under its key.
func (c *mutationCache) Mutation(obj interface{}) {
	c.lock.Lock()
	defer c.lock.Unlock()

	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleErrorWithLogger(c.logger, err, "DeletionHandlingMetaNamespaceKeyFunc")
		return
	}
	if c.supersededLocked(key, obj) {
		return
	}
	c.recent.Add(key, obj, c.ttl)
}

// supersededLocked reports whether what is remembered under key makes obj
// stale: a newer write, or a tombstone of the same object (same resource
// version or same UID; a different UID is a re-created object).
func (c *mutationCache) supersededLocked(key string, obj interface{}) bool {
	newObj, ok := obj.(runtime.Object)
	if !ok {
		return false
	}
	local, ok := c.recent.Get(key)
	if !ok {
		return false
	}
	localObj, ok := local.(runtime.Object)
	if !ok {
		return false
	}
	cmp := c.compareLocked(newObj, localObj, "the new write")
	if cmp < 0 {
		return true
	}
	t, ok := localObj.(*mutationTombstone)
	if !ok {
		return false
	}
	if cmp == 0 {
		return true
	}
	m, err := objmeta.Accessor(obj)
	return err == nil && m.GetUID() == t.UID
}

// OnAddOrUpdate forgets the local write under obj's key once obj is at least
// as new.
func (c *mutationCache) OnAddOrUpdate(obj runtime.Object) {
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleErrorWithLogger(c.logger, err, "DeletionHandlingMetaNamespaceKeyFunc")
		return
	}
	c.lock.Lock()
	defer c.lock.Unlock()

	local, ok := c.recent.Get(key)
	if !ok {
		return
	}
	if localObj, ok := local.(runtime.Object); ok && c.compareLocked(obj, localObj, "the informer's copy") >= 0 {
		c.recent.Remove(key)
	}
}

// OnDelete remembers that obj was deleted, so GetByKey stops returning an
// older local write of it, unless a newer write of a different object (a
// re-creation) is already remembered.
func (c *mutationCache) OnDelete(obj runtime.Object) {
	m, err := objmeta.Accessor(obj)
	if err != nil {
		return
	}
	key, err := DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleErrorWithLogger(c.logger, err, "DeletionHandlingMetaNamespaceKeyFunc")
		return
	}
	c.lock.Lock()
	defer c.lock.Unlock()

	if local, ok := c.recent.Get(key); ok {
		if localObj, ok := local.(runtime.Object); ok {
			localMeta, err := objmeta.Accessor(localObj)
			if err != nil {
				return
			}
			if localMeta.GetUID() != m.GetUID() && c.compareLocked(obj, localObj, "the deleted object") < 0 {
				return
			}
		}
	}
	c.recent.Add(key, &mutationTombstone{ObjectMeta: metav1.ObjectMeta{
		Namespace:       m.GetNamespace(),
		Name:            m.GetName(),
		UID:             m.GetUID(),
		ResourceVersion: m.GetResourceVersion(),
	}}, c.ttl)
}

// compareLocked orders two objects by integer resource version. client-go
// panics on a version that is not an integer; here the error is logged and
// the object the caller trusts more (lhs: the informer's copy or the newest
// write) wins.
func (c *mutationCache) compareLocked(lhs, rhs runtime.Object, lhsRole string) int {
	l, errL := integerResourceVersion(lhs)
	r, errR := integerResourceVersion(rhs)
	switch {
	case errL != nil || errR != nil:
		utilruntime.HandleErrorWithLogger(c.logger, fmt.Errorf("%w; %w", errL, errR), "Cannot compare resource versions, preferring "+lhsRole)
		return 1
	case l < r:
		return -1
	case l > r:
		return 1
	default:
		return 0
	}
}

// integerResourceVersion parses obj's resource version; "" counts as 0.
func integerResourceVersion(obj runtime.Object) (uint64, error) {
	m, err := objmeta.Accessor(obj)
	if err != nil {
		return 0, err
	}
	rv := m.GetResourceVersion()
	if rv == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("resource version %q of %s is not an unsigned integer", rv, keyparts.Join(m.GetNamespace(), m.GetName()))
	}
	return v, nil
}

func isMutationTombstone(obj interface{}) bool {
	_, ok := obj.(*mutationTombstone)
	return ok
}

// mutationTombstone records a deletion seen by OnDelete: the deleted
// object's name, UID and resource version. It never leaves the cache.
type mutationTombstone struct {
	metav1.ObjectMeta
}

var _ runtime.Object = &mutationTombstone{}

func (t *mutationTombstone) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (t *mutationTombstone) DeepCopyObject() runtime.Object {
	return &mutationTombstone{ObjectMeta: *t.ObjectMeta.DeepCopy()}
}
