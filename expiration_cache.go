package cache

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/features"
	"k8s.io/utils/clock"

	"github.com/openinformer/cache/internal/objmeta"
)

// ExpirationCache is a Store whose entries expire. Each entry is stored
// with the time it was written; an expired entry is removed when a read
// (Get, GetByKey, List) comes across it, so reads never return it. ListKeys
// does not check expiry. Build one with NewTTLStore or NewExpirationStore.
type ExpirationCache struct {
	keyFunc KeyFunc
	clock   clock.Clock
	policy  ExpirationPolicy
	// expire removes an expired entry, with lock held; test fakes replace it.
	expire func(key string)

	// One lock guards everything: a read may remove the entry it found
	// expired, so reads and writes both need exclusive access, and a single
	// lock makes "check expiry, then remove" atomic with respect to writes.
	lock    sync.Mutex
	entries map[string]*TimestampedEntry
	rv      string
}

var _ Store = &ExpirationCache{}

// TTLPolicy expires entries older than TTL, as measured by Clock. A TTL of
// zero or less never expires anything; a nil Clock means the real clock.
type TTLPolicy struct {
	// TTL is how long an entry lives after it was written.
	TTL time.Duration
	// Clock tells the time. ExpirationCaches built with this policy take
	// their write timestamps from it too.
	Clock clock.Clock
}

// IsExpired reports whether the entry is older than the TTL.
func (p *TTLPolicy) IsExpired(obj *TimestampedEntry) bool {
	return p.TTL > 0 && p.clock().Since(obj.Timestamp) > p.TTL
}

func (p *TTLPolicy) clock() clock.Clock {
	if p.Clock == nil {
		return clock.RealClock{}
	}
	return p.Clock
}

// NewTTLStore returns an ExpirationCache whose entries expire ttl after
// they were written; a ttl of zero or less keeps them forever.
func NewTTLStore(keyFunc KeyFunc, ttl time.Duration) Store {
	return NewExpirationStore(keyFunc, &TTLPolicy{TTL: ttl, Clock: clock.RealClock{}})
}

// NewExpirationStore returns an ExpirationCache whose entries expire when
// expirationPolicy says so; a nil policy never expires anything. Write
// timestamps come from the policy's clock when it is a *TTLPolicy (so a
// fake clock in the policy controls the whole cache), else from the real
// clock.
func NewExpirationStore(keyFunc KeyFunc, expirationPolicy ExpirationPolicy) Store {
	clk := clock.Clock(clock.RealClock{})
	if ttl, ok := expirationPolicy.(*TTLPolicy); ok && ttl != nil && ttl.Clock != nil {
		clk = ttl.Clock
	}
	return newExpirationCache(keyFunc, expirationPolicy, clk)
}

func newExpirationCache(keyFunc KeyFunc, policy ExpirationPolicy, clk clock.Clock) *ExpirationCache {
	c := &ExpirationCache{
		keyFunc: keyFunc,
		clock:   clk,
		policy:  policy,
		entries: make(map[string]*TimestampedEntry),
	}
	c.expire = func(key string) { delete(c.entries, key) }
	return c
}

// getOrExpire returns the live object under key, removing it if expired.
func (c *ExpirationCache) getOrExpire(key string) (interface{}, bool) {
	c.lock.Lock()
	defer c.lock.Unlock()
	return c.getOrExpireLocked(key)
}

func (c *ExpirationCache) getOrExpireLocked(key string) (interface{}, bool) {
	entry, ok := c.entries[key]
	if !ok || !c.liveLocked(key, entry) {
		return nil, false
	}
	return entry.Obj, true
}

// liveLocked reports whether the entry under key is alive, removing it if
// it expired.
func (c *ExpirationCache) liveLocked(key string, entry *TimestampedEntry) bool {
	if c.policy != nil && c.policy.IsExpired(entry) {
		c.expire(key)
		return false
	}
	return true
}

// GetByKey returns the object under key unless it is absent or expired.
func (c *ExpirationCache) GetByKey(key string) (interface{}, bool, error) {
	obj, exists := c.getOrExpire(key)
	return obj, exists, nil
}

// Get returns the stored object with obj's key unless it is absent or
// expired. A key failure is a KeyError.
func (c *ExpirationCache) Get(obj interface{}) (interface{}, bool, error) {
	key, err := c.keyFunc(obj)
	if err != nil {
		return nil, false, KeyError{Obj: obj, Err: err}
	}
	item, exists := c.getOrExpire(key)
	return item, exists, nil
}

// List returns the objects that have not expired, removing expired ones.
func (c *ExpirationCache) List() []interface{} {
	c.lock.Lock()
	defer c.lock.Unlock()
	list := make([]interface{}, 0, len(c.entries))
	for key, entry := range c.entries {
		if c.liveLocked(key, entry) {
			list = append(list, entry.Obj)
		}
	}
	return list
}

// ListKeys returns every stored key, expired or not.
func (c *ExpirationCache) ListKeys() []string {
	c.lock.Lock()
	defer c.lock.Unlock()
	keys := make([]string, 0, len(c.entries))
	for key := range c.entries {
		keys = append(keys, key)
	}
	return keys
}

// LastStoreSyncResourceVersion returns the resource version last recorded
// by Replace, Bookmark or the Delete of an object with metadata, or ""
// while the AtomicFIFO feature gate is off. Add and Update do not record
// one: like client-go, the cache stores entries, not the objects.
func (c *ExpirationCache) LastStoreSyncResourceVersion() string {
	if !features.FeatureGates().Enabled(features.AtomicFIFO) {
		return ""
	}
	c.lock.Lock()
	defer c.lock.Unlock()
	return c.rv
}

// Bookmark records rv as the store's resource version.
func (c *ExpirationCache) Bookmark(rv string) {
	c.lock.Lock()
	defer c.lock.Unlock()
	c.rv = rv
}

// Add stores obj with the current time, replacing any entry with the same
// key. A key failure is a KeyError.
func (c *ExpirationCache) Add(obj interface{}) error {
	key, err := c.keyFunc(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	c.lock.Lock()
	defer c.lock.Unlock()
	c.entries[key] = &TimestampedEntry{Obj: obj, Timestamp: c.clock.Now()}
	return nil
}

// Update is Add: it stores obj and restarts its lifetime.
func (c *ExpirationCache) Update(obj interface{}) error {
	return c.Add(obj)
}

// Delete removes the entry with obj's key, if any, and records obj's
// resource version if it has metadata. A key failure is a KeyError.
func (c *ExpirationCache) Delete(obj interface{}) error {
	key, err := c.keyFunc(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	m, metaErr := objmeta.Accessor(obj)
	c.lock.Lock()
	defer c.lock.Unlock()
	delete(c.entries, key)
	if metaErr == nil {
		c.rv = m.GetResourceVersion()
	}
	return nil
}

// Replace swaps the whole content for list, all entries stamped with one
// time, and records resourceVersion. If any key cannot be computed nothing
// changes and the KeyError is returned.
func (c *ExpirationCache) Replace(list []interface{}, resourceVersion string) error {
	now := c.clock.Now()
	entries := make(map[string]*TimestampedEntry, len(list))
	for _, obj := range list {
		key, err := c.keyFunc(obj)
		if err != nil {
			return KeyError{Obj: obj, Err: err}
		}
		entries[key] = &TimestampedEntry{Obj: obj, Timestamp: now}
	}
	c.lock.Lock()
	defer c.lock.Unlock()
	c.entries, c.rv = entries, resourceVersion
	return nil
}

// Resync does nothing.
func (c *ExpirationCache) Resync() error {
	return nil
}

// FakeExpirationPolicy is an ExpirationPolicy for tests: every entry is
// expired except those whose key, as computed by RetrieveKeyFunc from the
// *TimestampedEntry, is in NeverExpire. A nil RetrieveKeyFunc keys the
// entry's object with DeletionHandlingMetaNamespaceKeyFunc.
type FakeExpirationPolicy struct {
	NeverExpire     sets.Set[string]
	RetrieveKeyFunc KeyFunc
}

// IsExpired reports whether the entry's key is missing from NeverExpire.
func (p *FakeExpirationPolicy) IsExpired(obj *TimestampedEntry) bool {
	var key string
	if p.RetrieveKeyFunc != nil {
		key, _ = p.RetrieveKeyFunc(obj)
	} else if obj != nil {
		key, _ = DeletionHandlingMetaNamespaceKeyFunc(obj.Obj)
	}
	return !p.NeverExpire.Has(key)
}

// NewFakeExpirationStore returns an ExpirationCache for tests that stamps
// entries with cacheClock and reports every expired key on deletedKeys
// after removing the entry. With a nil deletedKeys, expired entries are
// hidden from reads but never removed. The send happens while the cache is
// locked, so deletedKeys needs room for every expiry the test causes.
func NewFakeExpirationStore(keyFunc KeyFunc, deletedKeys chan<- string, expirationPolicy ExpirationPolicy, cacheClock clock.Clock) Store {
	c := newExpirationCache(keyFunc, expirationPolicy, cacheClock)
	c.expire = func(key string) {
		if deletedKeys != nil {
			delete(c.entries, key)
			deletedKeys <- key
		}
	}
	return c
}
