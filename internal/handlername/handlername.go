// Package handlername names event handlers the way client-go's shared
// informer does in logs, lag metrics and sync checkers: function adapters
// after where their functions are defined, other handlers after their type.
package handlername

import (
	"reflect"
	"runtime"
	"strings"
)

// Funcs returns the qualifier (symbol name minus its last element) shared
// by all non-nil functions of an adapter, or their full symbol names joined
// by "+" when they were defined in different places; "" when all are nil.
func Funcs(fns ...any) string {
	var names []string
	qualifier, shared := "", true
	for _, fn := range fns {
		name := symbol(fn)
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

// symbol returns the runtime symbol of a function value; "" for a nil
// function.
func symbol(fn any) string {
	v := reflect.ValueOf(fn)
	if !v.IsValid() || v.IsNil() {
		return ""
	}
	if f := runtime.FuncForPC(v.Pointer()); f != nil {
		return f.Name()
	}
	return ""
}

// Type returns "pkgpath.TypeName" of v, looking through a non-nil pointer;
// "" when the type has neither. A type of package from whose base name (its
// name without type arguments) is in renamed is named under package to
// instead: the replacement's handler types answer with the replaced
// package's path, so that log scrapers and dashboards keep working.
func Type(v any, from, to string, renamed map[string]bool) string {
	t := reflect.TypeOf(v)
	if rv := reflect.ValueOf(v); t.Kind() == reflect.Pointer && !rv.IsNil() {
		t = t.Elem()
	}
	pkg := t.PkgPath()
	if pkg == "" {
		return t.Name()
	}
	if base, _, _ := strings.Cut(t.Name(), "["); pkg == from && renamed[base] {
		pkg = to
	}
	return pkg + "." + t.Name()
}

// AsClientGo is Type for a handler of the cache module's root package or
// any other: the root package's handler types that have a namesake in
// client-go are named under client-go's path, as client-go names its own.
func AsClientGo(v any) string {
	return Type(v, rootPath, clientGoPath, clientGoHandlerTypes)
}

// rootPath and clientGoPath are the import paths of the root package and
// of the one it replaces.
const (
	rootPath     = "github.com/openinformer/cache"
	clientGoPath = "k8s.io/client-go/tools/cache"
)

// clientGoHandlerTypes are the root package's handler types (generic ones
// without their type arguments) that have a namesake in client-go.
var clientGoHandlerTypes = map[string]bool{
	"ResourceEventHandlerFuncs":         true,
	"ResourceEventHandlerDetailedFuncs": true,
	"FilteringResourceEventHandler":     true,
	"typedResourceEventHandler":         true,
}

// Nil reports whether h is nil or a nil pointer to a type whose method is
// declared with a value receiver: such a value panics on every call.
func Nil(h any, method string) bool {
	if h == nil {
		return true
	}
	v := reflect.ValueOf(h)
	if v.Kind() != reflect.Pointer || !v.IsNil() {
		return false
	}
	_, valueReceiver := v.Type().Elem().MethodByName(method)
	return valueReceiver
}
