// Package lru is the bounded, expiring memory of a MutationCache: string
// keys, least recently used evicted first, entries expiring a fixed time
// after they were last written.
package lru

import (
	"time"

	"k8s.io/utils/clock"
)

// LRU holds at most maxSize entries. It is not safe for concurrent use;
// its owner's lock guards it.
type LRU struct {
	clock   clock.PassiveClock
	maxSize int
	entries map[string]*entry
	// head is a sentinel: head.next is the most recently used entry,
	// head.prev the least recently used.
	head entry
}

type entry struct {
	key        string
	value      interface{}
	expires    time.Time
	prev, next *entry
}

// New returns an empty LRU of at most maxSize entries, expiring by clk.
func New(maxSize int, clk clock.PassiveClock) *LRU {
	l := &LRU{clock: clk, maxSize: maxSize, entries: make(map[string]*entry)}
	l.head.prev, l.head.next = &l.head, &l.head
	return l
}

// Add stores value under key for ttl and marks it most recently used,
// evicting the least recently used entry when full.
func (l *LRU) Add(key string, value interface{}, ttl time.Duration) {
	expires := l.clock.Now().Add(ttl)
	if e, ok := l.entries[key]; ok {
		e.value, e.expires = value, expires
		l.moveToFront(e)
		return
	}
	if len(l.entries) >= l.maxSize {
		l.Remove(l.head.prev.key)
	}
	e := &entry{key: key, value: value, expires: expires}
	l.entries[key] = e
	l.linkFront(e)
}

// Get returns the unexpired value under key and marks it most recently
// used; an expired entry is dropped.
func (l *LRU) Get(key string) (interface{}, bool) {
	e, ok := l.entries[key]
	if !ok {
		return nil, false
	}
	if l.clock.Now().After(e.expires) {
		l.Remove(key)
		return nil, false
	}
	l.moveToFront(e)
	return e.value, true
}

// Remove forgets key.
func (l *LRU) Remove(key string) {
	e, ok := l.entries[key]
	if !ok {
		return
	}
	delete(l.entries, key)
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// KeysOldestFirst returns the unexpired keys from least to most recently used.
func (l *LRU) KeysOldestFirst() []string {
	now := l.clock.Now()
	keys := make([]string, 0, len(l.entries))
	for e := l.head.prev; e != &l.head; e = e.prev {
		if !now.After(e.expires) {
			keys = append(keys, e.key)
		}
	}
	return keys
}

func (l *LRU) moveToFront(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	l.linkFront(e)
}

func (l *LRU) linkFront(e *entry) {
	e.prev, e.next = &l.head, l.head.next
	l.head.next.prev = e
	l.head.next = e
}
