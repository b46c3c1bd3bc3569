// Package objmeta reads an object's metadata the way every component of
// the cache does: the direct route for typed and unstructured objects, a
// clear error for a typed nil pointer where client-go panics.
package objmeta

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrNilObject is returned instead of the nil-pointer panic client-go hits
// when a key is asked of a typed nil such as (*v1.Pod)(nil).
var ErrNilObject = errors.New("object has no meta: object is a nil pointer")

// Accessor returns obj's metadata, taking the direct route for the common
// case of typed and unstructured objects before falling back to meta.Accessor.
func Accessor(obj any) (metav1.Object, error) {
	if IsNilPointer(obj) {
		return nil, ErrNilObject
	}
	if m, ok := obj.(metav1.Object); ok {
		return m, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("object has no meta: %v", err)
	}
	return m, nil
}

// Listed returns obj's metadata as a lister reads it: with
// meta.Accessor's own error, as client-go's listers return it, but a clear
// error for a typed nil pointer, on which they panic.
func Listed(obj any) (metav1.Object, error) {
	if IsNilPointer(obj) {
		return nil, ErrNilObject
	}
	if m, ok := obj.(metav1.Object); ok {
		return m, nil
	}
	return meta.Accessor(obj)
}

// IsNilPointer reports whether obj is a non-nil interface holding a nil pointer.
func IsNilPointer(obj any) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Of is obj's metadata, if it has its own.
func Of(obj any) (metav1.Object, bool) {
	m, ok := obj.(metav1.Object)
	if !ok || IsNilPointer(obj) {
		return nil, false
	}
	return m, true
}
