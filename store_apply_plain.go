package cache

import (
	"fmt"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// plainDeltaStore applies deltas to any Store through its interface alone,
// one delta at a time: the path for a store that is not this package's.
type plainDeltaStore struct {
	Store
	logger klog.Logger
}

// deltaStoreOf returns store's own deltaStore, or the plain one.
func deltaStoreOf(store Store, logger klog.Logger) deltaStore {
	if own, ok := store.(deltaStore); ok {
		return own
	}
	return plainDeltaStore{Store: store, logger: logger}
}

// applyDeltas is the deltaStore operation; a batch is applied a delta at a
// time and every failure reported together.
func (p plainDeltaStore) applyDeltas(deltas []Delta, isInInitialList bool, changes []notification) ([]notification, []error, error) {
	if len(deltas) == 1 && !isBatchable(deltas[0].Type) {
		return applyWhole(p, deltas[0], isInInitialList, changes)
	}
	var errs []error
	for _, d := range deltas {
		var err error
		if changes, err = p.write(d, isInInitialList, changes); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case len(errs) == 0:
		return changes, nil, nil
	case len(deltas) == 1:
		return changes, nil, errs[0]
	}
	return changes, nil, fmt.Errorf("unexpected error when handling deltas: %v", errs)
}

// write applies one write delta.
func (p plainDeltaStore) write(d Delta, isInInitialList bool, changes []notification) ([]notification, error) {
	if d.Type == Deleted {
		if err := p.Delete(d.Object); err != nil {
			return changes, err
		}
		return append(changes, notification{kind: deleteNotification, oldObj: d.Object}), nil
	}
	if old, exists, err := p.Get(d.Object); err == nil && exists {
		if err := p.Update(d.Object); err != nil {
			return changes, err
		}
		return append(changes, notification{kind: updateNotification, oldObj: old, newObj: d.Object}), nil
	}
	if err := p.Add(d.Object); err != nil {
		return changes, err
	}
	return append(changes, notification{kind: addNotification, newObj: d.Object, initial: isInInitialList}), nil
}

// applyReplacedAll is the wholeStore operation: which stored keys are gone
// and which listed objects were stored is read key by key before the
// Replace. An object without a key is returned in dropped and left out.
func (p plainDeltaStore) applyReplacedAll(info ReplacedAllInfo, isInInitialList bool, changes []notification) ([]notification, []error, error) {
	before := len(changes)
	listed := make(map[string]struct{}, len(info.Objects))
	objs := make([]interface{}, 0, len(info.Objects))
	var dropped []error
	for _, obj := range info.Objects {
		key, err := informerKeyFunc(obj)
		if err != nil {
			dropped = append(dropped, KeyError{Obj: obj, Err: err})
			continue
		}
		listed[key] = struct{}{}
		objs = append(objs, obj)
	}
	changes = p.gone(listed, changes)
	previous := make([]interface{}, len(objs))
	for i, obj := range objs {
		if old, exists, err := p.Get(obj); err == nil && exists {
			previous[i] = old
		}
	}
	if err := p.Replace(objs, info.ResourceVersion); err != nil {
		return changes[:before], dropped, err
	}
	for i, obj := range objs {
		if previous[i] != nil {
			changes = append(changes, notification{kind: updateNotification, oldObj: previous[i], newObj: obj})
		} else {
			changes = append(changes, notification{kind: addNotification, newObj: obj, initial: isInInitialList})
		}
	}
	return changes, dropped, nil
}

// gone appends a tombstone for every stored key not listed.
func (p plainDeltaStore) gone(listed map[string]struct{}, changes []notification) []notification {
	for _, key := range p.ListKeys() {
		if _, ok := listed[key]; ok {
			continue
		}
		old, exists, err := p.GetByKey(key)
		if err != nil || !exists {
			utilruntime.HandleErrorWithLogger(p.logger, err, "Stored key vanished during replace, reporting its deletion without an object", "key", key)
			old = nil
		}
		changes = append(changes, notification{kind: deleteNotification, oldObj: DeletedFinalStateUnknown{Key: key, Obj: old}})
	}
	return changes
}
