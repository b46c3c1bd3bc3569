package fanout

import (
	"time"

	clientcache "k8s.io/client-go/tools/cache"
)

// Handler is what a listener calls: client-go's ResourceEventHandler.
type Handler = clientcache.ResourceEventHandler

// notificationChunk is how many notifications are handed to listeners at
// once when many arrive together (a relist, a late handler's initial adds),
// so that a handler is not kept waiting for the whole lot.
const notificationChunk = 1024

// Kind is which handler method a notification stands for.
type Kind uint8

// The three kinds of notification, one per handler method.
const (
	Add Kind = iota
	Update
	Delete
)

// Notification is one handler call waiting to happen: what the store side
// produces for a change and what a listener queues. Kept by value in the
// queue, so distributing it allocates nothing.
type Notification struct {
	// Old and New are the call's objects: New for an add, both for an
	// update, Old for a delete.
	Old, New any
	Kind     Kind
	// Initial is the isInInitialList flag of an add.
	Initial bool
	// tracked marks an initial add counted in the handler's sync tracker.
	tracked bool
	// enqueued is when it was distributed.
	enqueued stamp
}

// object is the object n leaves behind for its key: the new one, or for a
// delete the last one known.
func (n *Notification) object() any {
	if n.Kind == Delete {
		return n.Old
	}
	return n.New
}

// stamp is a distribution time in milliseconds since the processor's
// epoch, in 32 bits: a lagging handler's backlog is mostly notifications,
// and this keeps each at 40 bytes instead of 48. It wraps after about 49
// days; ages are computed modulo that, so they stay right for anything
// younger.
type stamp uint32

// stampAt is the stamp of now, a time since the processor's epoch.
func stampAt(now time.Duration) stamp { return stamp(now / time.Millisecond) }

// age is how long before now s was taken.
func (s stamp) age(now time.Duration) time.Duration {
	return time.Duration(stampAt(now)-s) * time.Millisecond
}

// CallOn makes the handler call n stands for.
func (n *Notification) CallOn(h Handler) {
	switch n.Kind {
	case Add:
		h.OnAdd(n.New, n.Initial)
	case Update:
		h.OnUpdate(n.Old, n.New)
	case Delete:
		h.OnDelete(n.Old)
	}
}
