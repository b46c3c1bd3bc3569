package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/watchlist"

	"github.com/openinformer/cache/internal/shardlw"
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
	return shardlw.New(lw, ToListerWatcherWithContext(lw), selector)
}
