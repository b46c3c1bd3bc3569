package sharding

import (
	"fmt"
	"maps"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache"
	"github.com/openinformer/cache/internal/handlername"
)

// shardHandler carries one MembershipInformer handler across generations. Only the live
// generation's notifications reach the handler; the pending generation's are recorded in
// nextView so that, at the switch, the handler is told exactly what changed.
type shardHandler struct {
	handler cache.ResourceEventHandler
	name    string               // handler's, which every generation's registration carries
	options cache.HandlerOptions // of its registration on each generation

	mu       sync.Mutex // held while handler runs, so the two generations never overlap in it
	removed  bool       // RemoveEventHandler was called: nothing reaches handler any more
	live     uint64     // generation whose notifications reach handler; 0 before the first
	next     uint64     // generation syncing to take over; 0 when none
	view     map[string]any
	nextView map[string]any
}

// shardStream is what one generation's informer calls for one shardHandler.
type shardStream struct {
	h *shardHandler
	g *shardGeneration
}

func (h *shardHandler) from(g *shardGeneration) cache.ResourceEventHandler { return shardStream{h, g} }

// register adds h to generation g's informer; the caller holds MembershipInformer.mu.
func (h *shardHandler) register(g *shardGeneration) error {
	reg, err := g.informer.AddEventHandlerWithOptions(h.from(g), h.options)
	if err != nil {
		return err
	}
	g.regs[h] = reg
	return nil
}

// EventHandlerName implements cache.NamedEventHandler: each generation's registration carries
// the name of the handler it delivers to, so that logs and lag metrics name the user's
// handler, not this adapter.
func (s shardStream) EventHandlerName() string { return s.h.name }

// handlerName names h as an informer would if h were registered on it directly: a
// cache.NamedEventHandler by its own name, a function adapter after where its functions are
// defined, anything else after its type (this module's handler types after client-go's, as an
// informer names them).
func handlerName(h cache.ResourceEventHandler) string {
	var name string
	switch h := h.(type) {
	case cache.NamedEventHandler:
		if v := reflect.ValueOf(h); v.Kind() != reflect.Pointer || !v.IsNil() {
			name = h.EventHandlerName()
		}
	case cache.ResourceEventHandlerFuncs:
		name = handlername.Funcs(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
	case *cache.ResourceEventHandlerFuncs: // never nil: refused before
		name = handlername.Funcs(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
	case clientcache.ResourceEventHandlerFuncs:
		name = handlername.Funcs(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
	case *clientcache.ResourceEventHandlerFuncs:
		name = handlername.Funcs(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
	}
	if name == "" {
		name = handlername.AsClientGo(h)
	}
	if name == "" {
		name = fmt.Sprintf("%T", h)
	}
	return name
}

func (s shardStream) OnAdd(obj any, isInInitialList bool) {
	s.h.notify(s.g, obj, false, func() { s.h.handler.OnAdd(obj, isInInitialList) })
}

func (s shardStream) OnUpdate(oldObj, newObj any) {
	s.h.notify(s.g, newObj, false, func() { s.h.handler.OnUpdate(oldObj, newObj) })
}

func (s shardStream) OnDelete(obj any) {
	s.h.notify(s.g, obj, true, func() { s.h.handler.OnDelete(obj) })
}

// notify records obj in the view of the generation it came from and, for the live one,
// passes it on. An object the generation's shard has been narrowed away from is dropped: the
// handler was told it left when the shard narrowed (see narrow), and checking under mu
// orders the two.
func (h *shardHandler) notify(g *shardGeneration, obj any, deleted bool, deliver func()) {
	key, keyErr := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.removed {
		return
	}
	var view map[string]any
	switch g.id {
	case h.live:
		view = h.view
	case h.next:
		view = h.nextView
	default: // a generation already replaced
		return
	}
	if !g.owns(obj) {
		return
	}
	if g.id == h.live {
		defer deliver()
	}
	switch {
	case keyErr != nil: // nothing to track; the informer reported it already
	case deleted:
		delete(view, key)
	default:
		view[key] = obj
	}
}

// expect prepares for generation gen: as the live one when there was none, otherwise as the
// one to switch to, forgetting any earlier one that never synced.
func (h *shardHandler) expect(gen uint64, live bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if live {
		h.live = gen
		return
	}
	h.next, h.nextView = gen, map[string]any{}
}

// narrow follows generation g's shard after it narrowed: each object outside it leaves the
// live view with a DeletedFinalStateUnknown, as at a switch, or leaves the pending view.
func (h *shardHandler) narrow(g *shardGeneration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.removed {
		return
	}
	switch g.id {
	case h.live:
		for key, obj := range h.view {
			if !g.owns(obj) {
				delete(h.view, key)
				h.handler.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: obj})
			}
		}
	case h.next:
		maps.DeleteFunc(h.nextView, func(_ string, obj any) bool { return !g.owns(obj) })
	}
}

// promote switches the handler to generation gen, telling it what differs between what it
// saw and what gen's informer has delivered: adds, updates, and a DeletedFinalStateUnknown for
// every object gen does not hold, deleted from the server or moved to another shard alike.
func (h *shardHandler) promote(gen uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.next != gen { // added after the switch began: already on gen
		return
	}
	if h.removed {
		h.live, h.next, h.view, h.nextView = gen, 0, nil, nil
		return
	}
	for key, obj := range h.nextView {
		prev, known := h.view[key]
		switch {
		case !known:
			h.handler.OnAdd(obj, false)
		case resourceVersionOf(prev) != resourceVersionOf(obj):
			h.handler.OnUpdate(prev, obj)
		}
	}
	for key, prev := range h.view {
		if _, kept := h.nextView[key]; !kept {
			h.handler.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: prev})
		}
	}
	h.live, h.next = gen, 0
	h.view, h.nextView = h.nextView, nil
}

func resourceVersionOf(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// liveIndexer reads whichever generation is live at each call.
type liveIndexer struct{ mi *MembershipInformer }

var _ cache.Indexer = liveIndexer{}

func (l liveIndexer) Add(obj any) error    { return l.mi.liveIndexer().Add(obj) }
func (l liveIndexer) Update(obj any) error { return l.mi.liveIndexer().Update(obj) }
func (l liveIndexer) Delete(obj any) error { return l.mi.liveIndexer().Delete(obj) }
func (l liveIndexer) List() []any          { return l.mi.liveIndexer().List() }
func (l liveIndexer) ListKeys() []string   { return l.mi.liveIndexer().ListKeys() }
func (l liveIndexer) LastStoreSyncResourceVersion() string {
	return l.mi.liveIndexer().LastStoreSyncResourceVersion()
}
func (l liveIndexer) Bookmark(rv string)             { l.mi.liveIndexer().Bookmark(rv) }
func (l liveIndexer) Get(obj any) (any, bool, error) { return l.mi.liveIndexer().Get(obj) }
func (l liveIndexer) GetByKey(key string) (any, bool, error) {
	return l.mi.liveIndexer().GetByKey(key)
}
func (l liveIndexer) Replace(objs []any, rv string) error {
	return l.mi.liveIndexer().Replace(objs, rv)
}
func (l liveIndexer) Resync() error { return l.mi.liveIndexer().Resync() }
func (l liveIndexer) Index(name string, obj any) ([]any, error) {
	return l.mi.liveIndexer().Index(name, obj)
}
func (l liveIndexer) IndexKeys(name, value string) ([]string, error) {
	return l.mi.liveIndexer().IndexKeys(name, value)
}
func (l liveIndexer) ListIndexFuncValues(name string) []string {
	return l.mi.liveIndexer().ListIndexFuncValues(name)
}
func (l liveIndexer) ByIndex(name, value string) ([]any, error) {
	return l.mi.liveIndexer().ByIndex(name, value)
}
func (l liveIndexer) GetIndexers() cache.Indexers               { return l.mi.liveIndexer().GetIndexers() }
func (l liveIndexer) AddIndexers(indexers cache.Indexers) error { return l.mi.addIndexers(indexers) }
