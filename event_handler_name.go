package cache

import (
	"fmt"
	"reflect"

	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/handlername"
)

// NamedEventHandler is a handler that names itself in logs, handler lag
// metrics and sync checkers. Without it a handler is named after its type,
// as client-go names it, so every handler of one type (every
// controller-runtime controller's, say) shares one name and one metrics
// series. An empty name falls back to the type's.
type NamedEventHandler interface {
	ResourceEventHandler
	// EventHandlerName is the handler's name; it must not change.
	EventHandlerName() string
}

// eventHandlerName names a handler for logs, lag metrics and sync checkers:
// by its own name if it has one, else exactly as client-go would. Function adapters (ours, or client-go's when
// a caller mixes the two packages) are named after where their functions
// are defined; other handlers after their (dereferenced) type, this
// package's types under client-go's package path; anything unnamed falls
// back to its %T spelling, so the result is never empty.
func eventHandlerName(h ResourceEventHandler) string {
	var name string
	switch h := h.(type) {
	case nil:
	case NamedEventHandler:
		if rv := reflect.ValueOf(h); rv.Kind() != reflect.Pointer || !rv.IsNil() {
			name = h.EventHandlerName() // a nil pointer is named by its type, not asked
		}
		if name == "" {
			name = handlername.AsClientGo(h)
		}
	case ResourceEventHandlerFuncs:
		name = handlername.Funcs(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
	case *ResourceEventHandlerFuncs:
		if h != nil {
			name = handlername.Funcs(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
		}
	case clientcache.ResourceEventHandlerFuncs:
		name = handlername.Funcs(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
	case *clientcache.ResourceEventHandlerFuncs:
		if h != nil {
			name = handlername.Funcs(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
		}
	default:
		name = handlername.AsClientGo(h)
	}
	if name == "" {
		return fmt.Sprintf("%T", h)
	}
	return name
}

// isNilHandler reports whether h can never be called (handlername.Nil), so
// that it is refused up front like an untyped nil; a nil pointer to a type
// with pointer-receiver methods stays valid, as in client-go.
func isNilHandler(h ResourceEventHandler) bool { return handlername.Nil(h, "OnAdd") }
