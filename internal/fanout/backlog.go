package fanout

import (
	"sort"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/deque"
)

// A bounded backlog (SharedIndexInformerOptions.MaxPendingNotificationsPerHandler).
//
// When a handler's backlog is full, its notifications are replaced by one
// record per key they touched: what the handler last saw for the key and
// what the latest notification left. The latest state comes from the
// notifications themselves, not from the informer's cache, so resolving a
// collapse needs no lock of the informer and no read of its store, and is
// by construction consistent with every notification distributed to the
// handler so far: whatever is queued after the collapse is resolved follows
// it in order.

// keyState is what a collapsed backlog remembers of one key: the handler's
// view before the first dropped notification, and the latest state.
type keyState struct {
	// Before: obj if present; when the first dropped notification was a
	// delete, the handler held the deleted object and the delete itself is
	// kept in deletion. initial is the isInInitialList flag of a first
	// dropped add.
	obj      interface{}
	present  bool
	initial  bool
	deletion interface{}
	// After: the object the latest notification left, if it exists.
	latest interface{}
	exists bool
}

// backlogOverflow is a collapsed backlog; its memory is bounded by the
// number of distinct keys, not by the number of events.
type backlogOverflow struct {
	keyFunc func(any) (string, error)
	keys    map[string]keyState
	// initialOutstanding counts discarded initial-list adds whose sync
	// tracking is settled once the resync was delivered.
	initialOutstanding int64
}

func newBacklogOverflow(keyFunc func(any) (string, error)) *backlogOverflow {
	return &backlogOverflow{keyFunc: keyFunc, keys: map[string]keyState{}}
}

// record folds n into the key's state; it reports an object without a key.
func (o *backlogOverflow) record(n Notification) error {
	if n.tracked {
		o.initialOutstanding++
	}
	key, err := o.keyOf(n.object())
	if err != nil {
		return err
	}
	st, seen := o.keys[key]
	if !seen {
		switch n.Kind {
		case Add:
			st.initial = n.Initial
		case Update:
			st.obj, st.present = n.Old, true
		case Delete:
			st.present, st.deletion = true, n.Old
		}
	}
	st.latest, st.exists = n.New, n.Kind != Delete
	o.keys[key] = st
	return nil
}

// keyOf keys obj. A boxed object is keyed by its store key, undecoded:
// the informer keys its store and its handlers' backlogs with the same
// function (informerKeyFunc), and a decode here would run on the
// processLoop, under the listener's lock.
func (o *backlogOverflow) keyOf(obj interface{}) (string, error) {
	if key, boxed := boxedKey(obj); boxed {
		return key, nil
	}
	return o.keyFunc(obj)
}

// reconcile turns the record into notifications, key by key in sorted
// order. A key whose first dropped notification was a delete gets that
// delete, followed by an add if the key exists again. Otherwise: present
// before and now → update from the old to the latest object; only now →
// add; only before → delete with a DeletedFinalStateUnknown tombstone
// holding the old object (the final state was not observed).
func (o *backlogOverflow) reconcile() []Notification {
	keys := make([]string, 0, len(o.keys))
	for k := range o.keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	notes := make([]Notification, 0, len(keys))
	for _, k := range keys {
		st := o.keys[k]
		switch {
		case st.deletion != nil:
			notes = append(notes, Notification{Kind: Delete, Old: st.deletion})
			if st.exists {
				notes = append(notes, Notification{Kind: Add, New: st.latest})
			}
		case st.exists && st.present:
			notes = append(notes, Notification{Kind: Update, Old: st.obj, New: st.latest})
		case st.exists:
			notes = append(notes, Notification{Kind: Add, New: st.latest, Initial: st.initial})
		case st.present:
			notes = append(notes, Notification{Kind: Delete, Old: clientcache.DeletedFinalStateUnknown{Key: k, Obj: st.obj}})
		}
	}
	return notes
}

// recordLocked folds n into the listener's collapsed backlog. Called with
// l.mu held.
func (l *Listener) recordLocked(n Notification) {
	if err := l.overflow.record(n); err != nil {
		// The cache could not have stored such an object either.
		utilruntime.HandleErrorWithLogger(l.logger, err, "Dropping Notification without a key from a collapsed backlog")
	}
}

// collapse replaces the full backlog by the set of keys it touched, see
// backlogOverflow. Every collapse is counted; the warning is logged at most
// once per interval, since a handler that stays slow collapses repeatedly.
// Called with l.mu held; now is the distribution time.
func (l *Listener) collapse(n Notification, now time.Duration) {
	l.overflow = newBacklogOverflow(l.cfg.KeyFunc)
	for {
		old, ok := l.pending.PopFront()
		if !ok {
			break
		}
		l.recordLocked(old)
	}
	l.recordLocked(n)
	l.pending = deque.Blocks[Notification]{}
	l.metrics.Collapses.Inc()
	l.metrics.Pending.Set(float64(len(l.overflow.keys)))
	if l.collapseLogged && now-l.lastCollapseLog < slowHandlerWarnInterval {
		return
	}
	l.collapseLogged, l.lastCollapseLog = true, now
	l.logger.Info("Warning: event handler backlog reached its limit; it will get a resync of the current cache state instead",
		"limit", l.cfg.BacklogLimit, "keys", len(l.overflow.keys))
}

// deliverResync turns the collapsed backlog into one notification per
// touched key and delivers them, stopping early if the listener is removed.
func (l *Listener) deliverResync() {
	l.mu.Lock()
	ov := l.overflow
	l.overflow = nil
	l.mu.Unlock()
	if ov == nil {
		return
	}
	defer l.synced.finish(ov.initialOutstanding)
	for _, n := range ov.reconcile() {
		if !l.pauseAfterPanic() {
			return
		}
		l.pauseNext = !l.deliver(n)
	}
}
