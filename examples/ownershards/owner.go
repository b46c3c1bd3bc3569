package main

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/sharding"
)

// ownerListWatch lists and watches everything and keeps the objects whose controller's UID
// (their own UID when they have no controller) is in the shard: the shard's hash ranges,
// applied to the owner. An object whose controller changes (adoption, orphaning) can move:
// a MODIFIED event moving it out of the shard becomes DELETED, one moving it in becomes
// ADDED, so the informer's cache follows.
type ownerListWatch struct {
	lw  cache.ListerWatcherWithContext
	sel apisharding.Selector

	mu   sync.Mutex
	held map[types.UID]bool // objects passed on and not since deleted, by their own UID
}

func newOwnerListWatch(lw cache.ListerWatcher, shard sharding.Shard) (*ownerListWatch, error) {
	sel, err := shard.Selector()
	if err != nil {
		return nil, err
	}
	return &ownerListWatch{lw: cache.ToListerWatcherWithContext(lw), sel: sel, held: map[types.UID]bool{}}, nil
}

// owns hashes the object's controller's UID with the shard's own selector, so the ranges mean
// exactly what they mean to the API server.
func (o *ownerListWatch) owns(obj metav1.Object) bool {
	uid := obj.GetUID()
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		uid = ref.UID
	}
	ok, err := o.sel.Matches(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: uid}})
	return ok && err == nil
}

// List keeps the shard's items; they are what the informer holds from now on.
func (o *ownerListWatch) List(options metav1.ListOptions) (runtime.Object, error) {
	return o.ListWithContext(context.Background(), options)
}

// ListWithContext is List with a context.
func (o *ownerListWatch) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	list, err := o.lw.ListWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	kept := items[:0]
	o.mu.Lock()
	defer o.mu.Unlock()
	clear(o.held)
	for _, item := range items {
		if m := item.(metav1.Object); o.owns(m) {
			kept = append(kept, item)
			o.held[m.GetUID()] = true
		}
	}
	return list, meta.SetList(list, kept)
}

// Watch filters events as List filters items.
func (o *ownerListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return o.WatchWithContext(context.Background(), options)
}

// WatchWithContext is Watch with a context.
func (o *ownerListWatch) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	w, err := o.lw.WatchWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	if options.SendInitialEvents != nil && *options.SendInitialEvents {
		o.mu.Lock()
		clear(o.held) // a watch-list stream replaces what the informer holds, like a List
		o.mu.Unlock()
	}
	return watch.Filter(w, o.filter), nil
}

// filter passes bookmarks and errors, and the shard's objects as they move in and out.
func (o *ownerListWatch) filter(ev watch.Event) (watch.Event, bool) {
	m, ok := ev.Object.(metav1.Object)
	if !ok || ev.Type == watch.Bookmark || ev.Type == watch.Error {
		return ev, true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	uid, was, is := m.GetUID(), o.held[m.GetUID()], o.owns(m)
	switch {
	case ev.Type == watch.Deleted:
		delete(o.held, uid)
		return ev, was
	case is && !was:
		o.held[uid] = true
		return watch.Event{Type: watch.Added, Object: ev.Object}, true
	case !is && was:
		delete(o.held, uid)
		return watch.Event{Type: watch.Deleted, Object: ev.Object}, true
	}
	return ev, is
}
