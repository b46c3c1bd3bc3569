package cache

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

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
