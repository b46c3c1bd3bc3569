package cache

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openinformer/cache/internal/objmeta"
)

// client-go's ObjectName helpers.

// NewObjectName returns the ObjectName of namespace and name.
func NewObjectName(namespace, name string) ObjectName {
	return ObjectName{Namespace: namespace, Name: name}
}

// ParseObjectName parses a store key into an ObjectName, with the rules of
// SplitMetaNamespaceKey.
func ParseObjectName(str string) (ObjectName, error) {
	ns, name, err := SplitMetaNamespaceKey(str)
	return ObjectName{Namespace: ns, Name: name}, err
}

// NamespacedNameAsObjectName converts a types.NamespacedName.
func NamespacedNameAsObjectName(nn types.NamespacedName) ObjectName {
	return ObjectName{Namespace: nn.Namespace, Name: nn.Name}
}

// ObjectToName returns the ObjectName of an object with metadata.
func ObjectToName(obj interface{}) (ObjectName, error) {
	m, err := objmeta.Accessor(obj)
	if err != nil {
		return ObjectName{}, err
	}
	return MetaObjectToName(m), nil
}

// MetaObjectToName returns the ObjectName of obj.
func MetaObjectToName(obj metav1.Object) ObjectName {
	return ObjectName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// DeletionHandlingObjectToName is ObjectToName that also accepts a
// DeletedFinalStateUnknown tombstone and parses the key it carries.
func DeletionHandlingObjectToName(obj interface{}) (ObjectName, error) {
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		return ParseObjectName(d.Key)
	}
	return ObjectToName(obj)
}
