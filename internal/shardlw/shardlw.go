// Package shardlw restricts a ListerWatcher to a shard selector: every
// LIST and WATCH carries the selector, and what the server left outside
// the shard is filtered here (cache.NewShardedListWatch).
package shardlw

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/watchfilter"
)

// shardedListWatch restricts a ListerWatcher to a shard selector: it asks
// the server to filter and filters itself whatever the server left in.
type shardedListWatch struct {
	inner    clientcache.ListerWatcher // as given, for its watch-list support
	lw       clientcache.ListerWatcherWithContext
	selector sharding.Selector
	fellBack sync.Once // the client-side fallback is logged once
}

var (
	_ clientcache.ListerWatcher            = &shardedListWatch{}
	_ clientcache.ListerWatcherWithContext = &shardedListWatch{}
)

// New returns inner restricted to selector's shard; lw is inner with
// contexts.
func New(inner clientcache.ListerWatcher, lw clientcache.ListerWatcherWithContext, selector sharding.Selector) clientcache.ListerWatcher {
	return &shardedListWatch{inner: inner, lw: lw, selector: selector}
}

// withSelector returns options carrying the selector, or an error if they
// already carry another one.
func (s *shardedListWatch) withSelector(options metav1.ListOptions) (metav1.ListOptions, error) {
	want := s.selector.String()
	if options.ShardSelector != "" && options.ShardSelector != want {
		return options, fmt.Errorf("conflicting shard selector %q, expected %q", options.ShardSelector, want)
	}
	options.ShardSelector = want
	return options, nil
}

// List lists the shard with a background context.
func (s *shardedListWatch) List(options metav1.ListOptions) (apiruntime.Object, error) {
	return s.ListWithContext(context.Background(), options)
}

// ListWithContext lists the shard. A list whose ShardInfo names another
// selector is an error; one without ShardInfo is filtered here, and its
// remaining item count, which counted the whole collection, is cleared.
func (s *shardedListWatch) ListWithContext(ctx context.Context, options metav1.ListOptions) (apiruntime.Object, error) {
	options, err := s.withSelector(options)
	if err != nil {
		return nil, err
	}
	list, err := s.lw.ListWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	info, err := shardInfo(listMeta, list)
	if err != nil {
		return nil, err
	}
	if info != nil {
		if info.Selector != options.ShardSelector {
			return nil, fmt.Errorf("server applied shard selector %q, expected %q", info.Selector, options.ShardSelector)
		}
		return list, nil
	}
	s.logFallback(ctx)
	if err := s.keepMatching(list); err != nil {
		return nil, err
	}
	listMeta.SetRemainingItemCount(nil)
	return list, nil
}

// shardInfo is the list's ShardInfo, nil if the server sent none. An
// UnstructuredList of apimachinery v0.37 has no GetShardInfo method (v0.38
// adds it), so its metadata.shardInfo is read as v0.38's method does, or
// every dynamic informer with a shard selector would fail to list on v0.37.
func shardInfo(listMeta metav1.ListInterface, list apiruntime.Object) (*metav1.ShardInfo, error) {
	if sharded, ok := listMeta.(metav1.ShardedListInterface); ok {
		return sharded.GetShardInfo(), nil
	}
	u, ok := list.(*unstructured.UnstructuredList)
	if !ok {
		return nil, fmt.Errorf("object %T does not implement metav1.ShardedListInterface", list)
	}
	selector, found, err := unstructured.NestedString(u.Object, "metadata", "shardInfo", "selector")
	if !found || err != nil {
		return nil, nil
	}
	return &metav1.ShardInfo{Selector: selector}, nil
}

// keepMatching removes the items outside the shard from list; an item the
// selector cannot read fails the whole list.
func (s *shardedListWatch) keepMatching(list apiruntime.Object) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := make([]apiruntime.Object, 0, len(items))
	for _, item := range items {
		ok, err := s.selector.Matches(item)
		if err != nil {
			return err
		}
		if ok {
			kept = append(kept, item)
		}
	}
	return meta.SetList(list, kept)
}

// Watch watches the shard with a background context.
func (s *shardedListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), options)
}

// WatchWithContext watches the shard. Events are always checked, since a
// watch response does not say whether the server filtered: bookmarks and
// errors pass, events outside the shard are dropped (the first one logs
// the fallback), and one the selector cannot read is reported and dropped.
func (s *shardedListWatch) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	options, err := s.withSelector(options)
	if err != nil {
		return nil, err
	}
	w, err := s.lw.WatchWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	return watchfilter.New(w, func(ev watch.Event) bool {
		if ev.Type == watch.Bookmark || ev.Type == watch.Error {
			return true
		}
		ok, err := s.selector.Matches(ev.Object)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Unable to match watch event against shard selector")
			return false
		}
		if !ok {
			s.logFallback(ctx)
		}
		return ok
	}), nil
}

// IsWatchListSemanticsUnSupported forwards the wrapped ListerWatcher's
// answer, so a reflector streams exactly as it would without the shard.
func (s *shardedListWatch) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(s.inner)
}

func (s *shardedListWatch) logFallback(ctx context.Context) {
	s.fellBack.Do(func() {
		klog.FromContext(ctx).V(2).Info("Server did not apply shard selector; falling back to client-side filtering", "selector", s.selector.String())
	})
}
