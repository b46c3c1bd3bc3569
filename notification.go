package cache

import "time"

// notificationChunk is how many notifications are handed to listeners at
// once when many arrive together (a relist, a late handler's initial adds),
// so that a handler is not kept waiting for the whole lot.
const notificationChunk = 1024

type notificationKind uint8

const (
	addNotification notificationKind = iota
	updateNotification
	deleteNotification
)

// notification is one handler call waiting to happen: what the store side
// produces for a change (see batchNotifier) and what a listener queues.
// Kept by value in the queue, so distributing it allocates nothing.
type notification struct {
	oldObj, newObj interface{}
	kind           notificationKind
	// initial is the isInInitialList flag of an add.
	initial bool
	// tracked marks an initial add counted in the handler's sync tracker.
	tracked bool
	// enqueued is when it was distributed.
	enqueued stamp
}

// object is the object n leaves behind for its key: the new one, or for a
// delete the last one known.
func (n *notification) object() interface{} {
	if n.kind == deleteNotification {
		return n.oldObj
	}
	return n.newObj
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

// callOn makes the handler call n stands for.
func (n *notification) callOn(h ResourceEventHandler) {
	switch n.kind {
	case addNotification:
		h.OnAdd(n.newObj, n.initial)
	case updateNotification:
		h.OnUpdate(n.oldObj, n.newObj)
	case deleteNotification:
		h.OnDelete(n.oldObj)
	}
}
