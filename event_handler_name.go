package cache

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"

	clientcache "k8s.io/client-go/tools/cache"
)

// eventHandlerName names a handler for logs, lag metrics and sync checkers.
// Function adapters (ours, or client-go's when a caller mixes the two
// packages) are named after where their functions are defined;
// other handlers after their (dereferenced) type; anything unnamed falls
// back to its %T spelling, so the result is never empty.
func eventHandlerName(h ResourceEventHandler) string {
	var name string
	switch h := h.(type) {
	case nil:
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
// pointer; "" when the type has neither.
func namedTypeOf(v interface{}) string {
	t := reflect.TypeOf(v)
	if rv := reflect.ValueOf(v); t.Kind() == reflect.Pointer && !rv.IsNil() {
		t = t.Elem()
	}
	if t.PkgPath() == "" {
		return t.Name()
	}
	return t.PkgPath() + "." + t.Name()
}

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
