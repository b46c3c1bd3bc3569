package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/internal/watchfilter"
)

// ListWatch is a ListerWatcher built from functions. Each method prefers the
// function of its own flavour (with or without a context) and falls back to
// the other one.
type ListWatch struct {
	// ListFunc lists without a context.
	ListFunc ListFunc
	// WatchFunc watches without a context.
	WatchFunc WatchFunc
	// ListWithContextFunc lists with a context.
	ListWithContextFunc ListWithContextFunc
	// WatchFuncWithContext watches with a context.
	WatchFuncWithContext WatchFuncWithContext
	// DisableChunking is accepted for compatibility; reflectors page their
	// lists regardless, as client-go's do.
	DisableChunking bool

	// scope is what NewFilteredListWatchFromClient's requests are
	// restricted to, for snapshots (docs/RESTART.md); nil for a ListWatch
	// built otherwise, whose functions may list anything.
	scope func() *SnapshotScope
}

// snapshotScope is the scope the ListWatch was made for, nil if unknown.
func (lw *ListWatch) snapshotScope() *SnapshotScope {
	if lw.scope == nil {
		return nil
	}
	return lw.scope()
}

// listWatchScope is the scope lw was made for when it is a ListWatch that
// knows it (NewFilteredListWatchFromClient's), else nil.
func listWatchScope(lw ListerWatcher) *SnapshotScope {
	if l, ok := lw.(*ListWatch); ok {
		return l.snapshotScope()
	}
	return nil
}

var (
	_ ListerWatcher            = &ListWatch{}
	_ ListerWatcherWithContext = &ListWatch{}
)

// Errors of a ListWatch that lacks both functions of a kind, where
// client-go would call a nil function and panic.
var (
	errListWatchNoList  = errors.New("ListWatch has neither ListFunc nor ListWithContextFunc")
	errListWatchNoWatch = errors.New("ListWatch has neither WatchFunc nor WatchFuncWithContext")
)

// List lists with ListFunc, or ListWithContextFunc and a background context.
func (lw *ListWatch) List(options metav1.ListOptions) (apiruntime.Object, error) {
	return lw.list(context.Background(), options, true)
}

// ListWithContext lists with ListWithContextFunc, or ListFunc.
func (lw *ListWatch) ListWithContext(ctx context.Context, options metav1.ListOptions) (apiruntime.Object, error) {
	return lw.list(ctx, options, false)
}

// list calls the function of the preferred flavour, else the other one.
func (lw *ListWatch) list(ctx context.Context, options metav1.ListOptions, plainFirst bool) (apiruntime.Object, error) {
	switch {
	case lw.ListFunc != nil && (plainFirst || lw.ListWithContextFunc == nil):
		return lw.ListFunc(options)
	case lw.ListWithContextFunc != nil:
		return lw.ListWithContextFunc(ctx, options)
	default:
		return nil, errListWatchNoList
	}
}

// Watch watches with WatchFunc, or WatchFuncWithContext and a background
// context.
func (lw *ListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.watch(context.Background(), options, true)
}

// WatchWithContext watches with WatchFuncWithContext, or WatchFunc.
func (lw *ListWatch) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return lw.watch(ctx, options, false)
}

// watch calls the function of the preferred flavour, else the other one.
func (lw *ListWatch) watch(ctx context.Context, options metav1.ListOptions, plainFirst bool) (watch.Interface, error) {
	switch {
	case lw.WatchFunc != nil && (plainFirst || lw.WatchFuncWithContext == nil):
		return lw.WatchFunc(options)
	case lw.WatchFuncWithContext != nil:
		return lw.WatchFuncWithContext(ctx, options)
	default:
		return nil, errListWatchNoWatch
	}
}

// NewListWatchFromClient returns a ListWatch for resource in namespace
// (all namespaces if empty) restricted by fieldSelector.
func NewListWatchFromClient(c Getter, resource string, namespace string, fieldSelector fields.Selector) *ListWatch {
	return NewFilteredListWatchFromClient(c, resource, namespace, func(options *metav1.ListOptions) {
		options.FieldSelector = fieldSelector.String()
	})
}

// NewFilteredListWatchFromClient returns a ListWatch for resource in
// namespace whose requests pass through optionsModifier first. All four
// function fields are set; the context-free ones use context.Background().
func NewFilteredListWatchFromClient(c Getter, resource string, namespace string, optionsModifier func(options *metav1.ListOptions)) *ListWatch {
	list := func(ctx context.Context, options metav1.ListOptions) (apiruntime.Object, error) {
		optionsModifier(&options)
		return c.Get().Namespace(namespace).Resource(resource).
			VersionedParams(&options, metav1.ParameterCodec).
			Do(ctx).Get()
	}
	watchFn := func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
		options.Watch = true
		optionsModifier(&options)
		return c.Get().Namespace(namespace).Resource(resource).
			VersionedParams(&options, metav1.ParameterCodec).
			Watch(ctx)
	}
	return &ListWatch{
		ListFunc: func(options metav1.ListOptions) (apiruntime.Object, error) {
			return list(context.Background(), options)
		},
		WatchFunc: func(options metav1.ListOptions) (watch.Interface, error) {
			return watchFn(context.Background(), options)
		},
		ListWithContextFunc:  list,
		WatchFuncWithContext: watchFn,
		scope:                func() *SnapshotScope { return modifiedScope(namespace, optionsModifier) },
	}
}

// modifiedScope is the scope of requests in namespace that pass through
// optionsModifier: the selectors it sets on empty options. It is asked for
// only by an informer with snapshots, so that a modifier is otherwise
// called by requests alone, as client-go's is.
func modifiedScope(namespace string, optionsModifier func(options *metav1.ListOptions)) *SnapshotScope {
	var o metav1.ListOptions
	optionsModifier(&o)
	return &SnapshotScope{Namespace: namespace, LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector}
}

// ToListerWithContext returns l itself if it already takes a context, else
// an adapter that ignores the context.
func ToListerWithContext(l Lister) ListerWithContext {
	if lc, ok := l.(ListerWithContext); ok {
		return lc
	}
	return listerIgnoringContext{l}
}

type listerIgnoringContext struct{ Lister }

func (l listerIgnoringContext) ListWithContext(_ context.Context, options metav1.ListOptions) (apiruntime.Object, error) {
	return l.List(options)
}

// ToWatcherWithContext returns w itself if it already takes a context, else
// an adapter that ignores the context.
func ToWatcherWithContext(w Watcher) WatcherWithContext {
	if wc, ok := w.(WatcherWithContext); ok {
		return wc
	}
	return watcherIgnoringContext{w}
}

type watcherIgnoringContext struct{ Watcher }

func (w watcherIgnoringContext) WatchWithContext(_ context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return w.Watch(options)
}

// ToListerWatcherWithContext returns lw itself if it already takes a
// context, else an adapter that ignores the context.
func ToListerWatcherWithContext(lw ListerWatcher) ListerWatcherWithContext {
	if lwc, ok := lw.(ListerWatcherWithContext); ok {
		return lwc
	}
	return listerWatcherIgnoringContext{
		ListerWithContext:  ToListerWithContext(lw),
		WatcherWithContext: ToWatcherWithContext(lw),
	}
}

type listerWatcherIgnoringContext struct {
	ListerWithContext
	WatcherWithContext
}

// ToListWatcherWithWatchListSemantics wraps lw so that it reports whether
// client supports watch-list streaming: a client that says it does not
// (IsWatchListSemanticsUnSupported returning true, as client-go's fake
// clientsets do) makes reflectors skip streaming and LIST instead.
func ToListWatcherWithWatchListSemantics(lw *ListWatch, client any) ListerWatcher {
	return &listWatchWithWatchListSemantics{
		ListWatch:   lw,
		unsupported: watchlist.DoesClientNotSupportWatchListSemantics(client),
	}
}

type listWatchWithWatchListSemantics struct {
	*ListWatch
	unsupported bool
}

// IsWatchListSemanticsUnSupported reports whether the client this ListWatch
// was built for cannot stream with watch-list.
func (lw *listWatchWithWatchListSemantics) IsWatchListSemanticsUnSupported() bool {
	return lw.unsupported
}

// reportNilListerWatcher reports a missing ListerWatcher as soon as it is
// passed, because the constructors that take one have no error to return:
// the error names the call the user made (the outermost function of this
// package on the stack), goes to utilruntime.HandleError at once, and is
// returned for what was built to refuse to run with. nil when lw is set.
func reportNilListerWatcher(lw ListerWatcher) error {
	if lw != nil {
		return nil
	}
	err := fmt.Errorf("%s: nil ListerWatcher", packageEntryPoint())
	utilruntime.HandleError(err)
	return err
}

// packageEntryPoint is the name of the outermost function of this package
// on the caller's stack, without the package path. This package's own
// tests count as callers from outside.
func packageEntryPoint() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	entry := ""
	for {
		f, more := frames.Next()
		if inReflectorPackage(f.Function) && !strings.HasSuffix(f.File, "_test.go") {
			entry = strings.TrimPrefix(f.Function, reflectorPackage+".")
		} else if entry != "" || !more {
			return entry
		}
	}
}

// shardedListWatch restricts a ListerWatcher to a shard selector: it asks
// the server to filter and filters itself whatever the server left in.
type shardedListWatch struct {
	inner    ListerWatcher // as given, for its watch-list support
	lw       ListerWatcherWithContext
	selector sharding.Selector
	fellBack sync.Once // the client-side fallback is logged once
}

var (
	_ ListerWatcher            = &shardedListWatch{}
	_ ListerWatcherWithContext = &shardedListWatch{}
)

// NewShardedListWatch returns lw restricted to selector's shard: every LIST
// and WATCH carries the selector, a LIST the server answered without
// ShardInfo (its ShardedListAndWatch gate off) is filtered here, and watch
// events outside the shard are dropped here. A nil or empty selector, or a
// nil lw, returns lw unchanged (a nil lw is reported when an informer
// runs, where client-go's wrapper would panic on the first request).
func NewShardedListWatch(lw ListerWatcher, selector sharding.Selector) ListerWatcher {
	if lw == nil || selector == nil || selector.Empty() {
		return lw
	}
	return &shardedListWatch{inner: lw, lw: ToListerWatcherWithContext(lw), selector: selector}
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
