package cache

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/openinformer/cache/internal/keyparts"
	"github.com/openinformer/cache/internal/objmeta"
)

// client-go's key and index functions.

// MetaNamespaceKeyFunc is the standard KeyFunc: "namespace/name" for
// namespaced objects, "name" for cluster-scoped ones. An ExplicitKey is
// returned as it is.
func MetaNamespaceKeyFunc(obj interface{}) (string, error) {
	if key, ok := obj.(ExplicitKey); ok {
		return string(key), nil
	}
	p, err := keyparts.Meta(obj)
	if err != nil {
		return "", err
	}
	return p.Key(), nil
}

// isMetaNamespaceKeyFunc recognises the key functions that key an object
// with metadata by namespace and name: ours and client-go's, with or without
// tombstone handling.
func isMetaNamespaceKeyFunc(fn KeyFunc) bool {
	p := reflect.ValueOf(fn).Pointer()
	return p == reflect.ValueOf(MetaNamespaceKeyFunc).Pointer() ||
		p == reflect.ValueOf(DeletionHandlingMetaNamespaceKeyFunc).Pointer() ||
		p == clientGoMetaNamespaceKeyFunc || p == clientGoDeletionHandlingMetaNamespaceKeyFunc
}

// DeletionHandlingMetaNamespaceKeyFunc is MetaNamespaceKeyFunc that also
// accepts a DeletedFinalStateUnknown tombstone and returns the key it carries.
func DeletionHandlingMetaNamespaceKeyFunc(obj interface{}) (string, error) {
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	return MetaNamespaceKeyFunc(obj)
}

// SplitMetaNamespaceKey splits a key made by MetaNamespaceKeyFunc into its
// namespace and name. A key without "/" is a cluster-scoped name; a key with
// more than one "/" is an error.
func SplitMetaNamespaceKey(key string) (namespace, name string, err error) {
	i := strings.IndexByte(key, '/')
	if i < 0 {
		return "", key, nil
	}
	if strings.IndexByte(key[i+1:], '/') >= 0 {
		return "", "", fmt.Errorf("unexpected key format: %q", key)
	}
	return key[:i], key[i+1:], nil
}

// errNilObject is returned instead of the nil-pointer panic client-go hits
// when a key is asked of a typed nil such as (*v1.Pod)(nil).
var errNilObject = objmeta.ErrNilObject

// isNilPointer reports whether obj is a non-nil interface holding a nil pointer.
func isNilPointer(obj interface{}) bool { return objmeta.IsNilPointer(obj) }

var errEmptyIndexKeys = errors.New("unexpected empty indexKeys")

// IndexFuncToKeyFuncAdapter turns an IndexFunc that yields exactly one value
// per object into a KeyFunc.
func IndexFuncToKeyFuncAdapter(indexFunc IndexFunc) KeyFunc {
	return func(obj interface{}) (string, error) {
		values, err := indexFunc(obj)
		switch {
		case err != nil:
			return "", err
		case len(values) > 1:
			return "", fmt.Errorf("too many keys: %v", values)
		case len(values) == 0:
			return "", errEmptyIndexKeys
		}
		return values[0], nil
	}
}

// MetaNamespaceIndexFunc indexes objects by namespace. Like client-go, it
// reports the empty namespace together with the error for objects without
// metadata.
func MetaNamespaceIndexFunc(obj interface{}) ([]string, error) {
	m, err := objmeta.Accessor(obj)
	if err != nil {
		return []string{""}, err
	}
	return []string{m.GetNamespace()}, nil
}

// namespacedListerKey is the key a namespace lister looks name up under:
// namespace/name even for the empty namespace ("/name", which matches
// nothing), as client-go's listers build it.
func namespacedListerKey(namespace, name string) string { return namespace + "/" + name }
