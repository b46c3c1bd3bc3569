package crcache

import (
	"context"
	"fmt"
	"sync"
	"time"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/internal/handlername"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// controller-runtime registers every controller's handler with the same
// type and no name (its HandlerOptions carry only a package logger), so
// the handlers of one informer would share one name in logs and one
// handler-metrics series. Every informer this cache hands out names them
// apart: by the controller's name when the cache was reached through
// ForController, else "handler", with "#2", "#3"... for each further
// handler of the same name on that informer, in registration order.

// defaultHandlerName names a handler registered without ForController.
const defaultHandlerName = "handler"

// namedHandler is a controller-runtime handler with its name.
type namedHandler struct {
	cache.ResourceEventHandler
	name string
}

// EventHandlerName implements cache.NamedEventHandler.
func (h namedHandler) EventHandlerName() string { return h.name }

// handlerNames hands out one informer's handler names.
type handlerNames struct {
	mu    sync.Mutex
	taken map[string]int // handlers registered under each base name
}

// name returns h named after base, made unique on this informer; a nil
// handler (or a nil pointer that can never be called) is returned as it
// is, for the informer to refuse.
func (n *handlerNames) name(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	if handlername.Nil(h, "OnAdd") {
		return h
	}
	base := defaultHandlerName
	if named, ok := h.(cache.NamedEventHandler); ok && named.EventHandlerName() != "" {
		base, h = named.EventHandlerName(), unnamed(h)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.taken == nil {
		n.taken = map[string]int{}
	}
	n.taken[base]++
	if k := n.taken[base]; k > 1 {
		base = fmt.Sprintf("%s#%d", base, k)
	}
	return namedHandler{ResourceEventHandler: h, name: base}
}

// unnamed is the handler a ForController name wraps.
func unnamed(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	if n, ok := h.(namedHandler); ok {
		return n.ResourceEventHandler
	}
	return h
}

// namingInformer is an informer whose handlers are named by names.
type namingInformer struct {
	cache.SharedIndexInformer
	names *handlerNames
}

// AddEventHandler adds h under its name.
func (i namingInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(i.names.name(h))
}

// AddEventHandlerWithResyncPeriod adds h under its name.
func (i namingInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, d time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(i.names.name(h), d)
}

// AddEventHandlerWithOptions adds h under its name.
func (i namingInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(i.names.name(h), o)
}

// ForController returns c as controller name sees it: every handler added
// through an informer it hands out is named name (then "name#2"...) in
// handler metrics and logs, so that each controller of a manager has its
// own series. Pass it where controller-runtime takes a cache for a source:
//
//	source.Kind(crcache.ForController(mgr.GetCache(), "replicaset"), &corev1.Pod{}, handler)
//
// Reads and everything else go to c unchanged.
func ForController(c crcache.Cache, name string) crcache.Cache {
	return controllerCache{Cache: c, name: name}
}

// controllerCache is a cache whose informers name handlers after one
// controller.
type controllerCache struct {
	crcache.Cache
	name string
}

// GetInformer returns c's informer naming handlers after the controller.
func (c controllerCache) GetInformer(ctx context.Context, obj client.Object, opts ...crcache.InformerGetOption) (crcache.Informer, error) {
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	return c.wrap(inf), err
}

// GetInformerForKind returns c's informer naming handlers after the
// controller.
func (c controllerCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...crcache.InformerGetOption) (crcache.Informer, error) {
	inf, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	return c.wrap(inf), err
}

func (c controllerCache) wrap(inf crcache.Informer) crcache.Informer {
	if inf == nil {
		return nil
	}
	return controllerInformer{Informer: inf, name: c.name}
}

// controllerInformer names every handler added through it after one
// controller, for the informer underneath to make unique.
type controllerInformer struct {
	crcache.Informer
	name string
}

func (i controllerInformer) named(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	if handlername.Nil(h, "OnAdd") {
		return h
	}
	return namedHandler{ResourceEventHandler: h, name: i.name}
}

// AddEventHandler adds h named after the controller.
func (i controllerInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandler(i.named(h))
}

// AddEventHandlerWithResyncPeriod adds h named after the controller.
func (i controllerInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, d time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithResyncPeriod(i.named(h), d)
}

// AddEventHandlerWithOptions adds h named after the controller.
func (i controllerInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithOptions(i.named(h), o)
}
