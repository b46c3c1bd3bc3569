package cache

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"

	clientcache "k8s.io/client-go/tools/cache"
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
			name = namedTypeOf(h)
		}
	case ResourceEventHandlerFuncs:
		name = funcsQualifiedName(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
	case *ResourceEventHandlerFuncs:
		if h != nil {
			name = funcsQualifiedName(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
		}
	case clientcache.ResourceEventHandlerFuncs:
		name = funcsQualifiedName(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
	case *clientcache.ResourceEventHandlerFuncs:
		if h != nil {
			name = funcsQualifiedName(h.AddFunc, h.UpdateFunc, h.DeleteFunc)
		}
	default:
		name = namedTypeOf(h)
	}
	if name == "" {
		return fmt.Sprintf("%T", h)
	}
	return name
}

// namedTypeOf returns "pkgpath.TypeName" of v, looking through a non-nil
// pointer; "" when the type has neither. This package's handler types
// answer with client-go's path, since log scrapers and dashboards keyed on
// client-go's names must keep working after the import swap.
func namedTypeOf(v interface{}) string {
	t := reflect.TypeOf(v)
	if rv := reflect.ValueOf(v); t.Kind() == reflect.Pointer && !rv.IsNil() {
		t = t.Elem()
	}
	pkg := t.PkgPath()
	if pkg == "" {
		return t.Name()
	}
	if base, _, _ := strings.Cut(t.Name(), "["); pkg == thisPackagePath && clientGoHandlerTypes[base] {
		pkg = clientGoCachePath
	}
	return pkg + "." + t.Name()
}

// clientGoHandlerTypes are this package's handler types (generic ones
// without their type arguments) that have a namesake in client-go.
var clientGoHandlerTypes = map[string]bool{
	"ResourceEventHandlerFuncs":         true,
	"ResourceEventHandlerDetailedFuncs": true,
	"FilteringResourceEventHandler":     true,
	"typedResourceEventHandler":         true,
}

// thisPackagePath and clientGoCachePath are the import paths of this
// package and of the one it replaces.
var (
	thisPackagePath   = reflect.TypeOf(ResourceEventHandlerFuncs{}).PkgPath()
	clientGoCachePath = reflect.TypeOf(clientcache.ResourceEventHandlerFuncs{}).PkgPath()
)

// funcsQualifiedName returns the qualifier (symbol name minus its last
// element) shared by all non-nil functions, or their full symbol names
// joined by "+" when they were defined in different places.
func funcsQualifiedName(fns ...interface{}) string {
	var names []string
	qualifier, shared := "", true
	for _, fn := range fns {
		name := funcSymbolName(fn)
		if name == "" {
			continue
		}
		names = append(names, name)
		q := name
		if i := strings.LastIndexByte(q, '.'); i > 0 {
			q = q[:i]
		}
		if qualifier == "" {
			qualifier = q
		} else if q != qualifier {
			shared = false
		}
	}
	if shared {
		return qualifier
	}
	return strings.Join(names, "+")
}

// funcSymbolName returns the runtime symbol of a function value; "" for a
// nil function.
func funcSymbolName(fn interface{}) string {
	v := reflect.ValueOf(fn)
	if !v.IsValid() || v.IsNil() {
		return ""
	}
	if f := runtime.FuncForPC(v.Pointer()); f != nil {
		return f.Name()
	}
	return ""
}

// isNilHandler reports whether h is nil or a nil pointer to a type whose
// methods have value receivers: such a handler can never be called without
// panicking, so it is refused up front like an untyped nil. Nil pointers to
// types with pointer-receiver methods stay valid, as in client-go.
func isNilHandler(h ResourceEventHandler) bool {
	if h == nil {
		return true
	}
	v := reflect.ValueOf(h)
	if v.Kind() != reflect.Pointer || !v.IsNil() {
		return false
	}
	_, valueReceiver := v.Type().Elem().MethodByName("OnAdd")
	return valueReceiver
}
