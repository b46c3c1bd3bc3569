package cache

import (
	"time"

	"k8s.io/utils/clock"
)

// mutationLRU is the bounded, expiring memory of a MutationCache: string
// keys, least recently used evicted first, entries expiring a fixed time
// after they were last written. It is not safe for concurrent use; the
// MutationCache's lock guards it.
type mutationLRU struct {
	clock   clock.PassiveClock
	maxSize int
	entries map[string]*mutationLRUEntry
	// head is a sentinel: head.next is the most recently used entry,
	// head.prev the least recently used.
	head mutationLRUEntry
}

type mutationLRUEntry struct {
	key        string
	value      interface{}
	expires    time.Time
	prev, next *mutationLRUEntry
}

func newMutationLRU(maxSize int, clk clock.PassiveClock) *mutationLRU {
	l := &mutationLRU{clock: clk, maxSize: maxSize, entries: make(map[string]*mutationLRUEntry)}
	l.head.prev, l.head.next = &l.head, &l.head
	return l
}

// add stores value under key for ttl and marks it most recently used,
// evicting the least recently used entry when full.
func (l *mutationLRU) add(key string, value interface{}, ttl time.Duration) {
	expires := l.clock.Now().Add(ttl)
	if e, ok := l.entries[key]; ok {
		e.value, e.expires = value, expires
		l.moveToFront(e)
		return
	}
	if len(l.entries) >= l.maxSize {
		l.remove(l.head.prev.key)
	}
	e := &mutationLRUEntry{key: key, value: value, expires: expires}
	l.entries[key] = e
	l.linkFront(e)
}

// get returns the unexpired value under key and marks it most recently
// used; an expired entry is dropped.
func (l *mutationLRU) get(key string) (interface{}, bool) {
	e, ok := l.entries[key]
	if !ok {
		return nil, false
	}
	if l.clock.Now().After(e.expires) {
		l.remove(key)
		return nil, false
	}
	l.moveToFront(e)
	return e.value, true
}

func (l *mutationLRU) remove(key string) {
	e, ok := l.entries[key]
	if !ok {
		return
	}
	delete(l.entries, key)
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// keysOldestFirst returns the unexpired keys from least to most recently used.
func (l *mutationLRU) keysOldestFirst() []string {
	now := l.clock.Now()
	keys := make([]string, 0, len(l.entries))
	for e := l.head.prev; e != &l.head; e = e.prev {
		if !now.After(e.expires) {
			keys = append(keys, e.key)
		}
	}
	return keys
}

func (l *mutationLRU) moveToFront(e *mutationLRUEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	l.linkFront(e)
}

func (l *mutationLRU) linkFront(e *mutationLRUEntry) {
	e.prev, e.next = &l.head, l.head.next
	l.head.next.prev = e
	l.head.next = e
}
