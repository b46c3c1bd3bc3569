package cache

import (
	"errors"
	"fmt"
	"hash/maphash"
	"reflect"
	"strings"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openinformer/cache/internal/objmeta"
)

// accessor returns obj's metadata (see objmeta.Accessor).
func accessor(obj interface{}) (metav1.Object, error) { return objmeta.Accessor(obj) }

// MetaNamespaceKeyFunc is the standard KeyFunc: "namespace/name" for
// namespaced objects, "name" for cluster-scoped ones. An ExplicitKey is
// returned as it is.
func MetaNamespaceKeyFunc(obj interface{}) (string, error) {
	if key, ok := obj.(ExplicitKey); ok {
		return string(key), nil
	}
	p, err := metaKeyParts(obj)
	if err != nil {
		return "", err
	}
	return p.key(), nil
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

// joinKey is the inverse of SplitMetaNamespaceKey for well-formed parts.
func joinKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
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

// keyParts is a key held as the two strings it joins, so that code which only
// compares or hashes keys need not build them: the key is "namespace/name",
// or name alone when namespace is empty. Any key, whatever made it, is also
// the keyParts with an empty namespace (see partsOfKey); two keyParts stand
// for the same key exactly when their keys are equal, not their fields.
type keyParts struct {
	namespace string
	name      string
}

// partsOfKey holds an already built key.
func partsOfKey(key string) keyParts { return keyParts{name: key} }

// metaKeyParts returns the parts of the key MetaNamespaceKeyFunc gives obj,
// with its errors, without joining them; the strings are the object's own.
func metaKeyParts(obj interface{}) (keyParts, error) {
	if key, ok := obj.(ExplicitKey); ok {
		return partsOfKey(string(key)), nil
	}
	m, err := accessor(obj)
	if err != nil {
		return keyParts{}, err
	}
	return keyParts{namespace: m.GetNamespace(), name: m.GetName()}, nil
}

// key joins the parts; it allocates only when namespace is not empty.
func (p keyParts) key() string { return joinKey(p.namespace, p.name) }

// is reports whether key is p's key, without joining the parts.
func (p keyParts) is(key string) bool {
	if p.namespace == "" {
		return key == p.name
	}
	n := len(p.namespace)
	return len(key) == n+1+len(p.name) && key[:n] == p.namespace && key[n] == '/' && key[n+1:] == p.name
}

// joinBufSize bounds the keys joined on the stack; a namespace has at most
// 63 bytes, so only names longer than 64 take the allocating paths.
const joinBufSize = 128

// joinInto joins a key with a namespace into buf and returns it as a string
// aliasing buf, valid only while buf is and never to be kept; ok is false
// when the key is cluster-scoped or does not fit.
func (p keyParts) joinInto(buf *[joinBufSize]byte) (key string, ok bool) {
	if p.namespace == "" || len(p.namespace)+1+len(p.name) > joinBufSize {
		return "", false
	}
	b := append(append(append(buf[:0], p.namespace...), '/'), p.name...)
	return unsafe.String(&b[0], len(b)), true
}

// hash is maphash.String(seed, p.key()), computed without building the key.
func (p keyParts) hash(seed maphash.Seed) uint64 {
	if p.namespace == "" {
		return maphash.String(seed, p.name)
	}
	var buf [joinBufSize]byte
	if key, ok := p.joinInto(&buf); ok {
		// One hash over the joined bytes is faster than a streaming Hash,
		// and equal to it.
		return maphash.String(seed, key)
	}
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(p.namespace)
	h.WriteByte('/')
	h.WriteString(p.name)
	return h.Sum64()
}

// compare orders p and q as strings.Compare orders their keys, without
// building them.
func (p keyParts) compare(q keyParts) int {
	a, an := p.segments()
	b, bn := q.segments()
	return compareJoined(a[:an], b[:bn])
}

// segments returns the strings the key concatenates and how many there are.
func (p keyParts) segments() ([3]string, int) {
	if p.namespace == "" {
		return [3]string{p.name}, 1
	}
	return [3]string{p.namespace, "/", p.name}, 3
}

// compareJoined compares the concatenations of a and b.
func compareJoined(a, b []string) int {
	ai, ao, bi, bo := 0, 0, 0, 0
	for {
		for ai < len(a) && ao == len(a[ai]) {
			ai, ao = ai+1, 0
		}
		for bi < len(b) && bo == len(b[bi]) {
			bi, bo = bi+1, 0
		}
		switch {
		case ai == len(a) && bi == len(b):
			return 0
		case ai == len(a):
			return -1
		case bi == len(b):
			return 1
		}
		n := min(len(a[ai])-ao, len(b[bi])-bo)
		if c := strings.Compare(a[ai][ao:ao+n], b[bi][bo:bo+n]); c != 0 {
			return c
		}
		ao, bo = ao+n, bo+n
	}
}

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
	m, err := accessor(obj)
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
	m, err := accessor(obj)
	if err != nil {
		return []string{""}, err
	}
	return []string{m.GetNamespace()}, nil
}

// namespacedListerKey is the key a namespace lister looks name up under:
// namespace/name even for the empty namespace ("/name", which matches
// nothing), as client-go's listers build it.
func namespacedListerKey(namespace, name string) string { return namespace + "/" + name }

// withoutObject returns err as a log line of ours may print it: a
// KeyError's text embeds its whole object (a Secret's data, say), so it is
// split into what identifies the object, its type and, if it has metadata,
// its namespace and name, as key-value pairs, and its cause. It is for
// lines that log one KeyError as structured pairs; withoutObjects rewrites
// every KeyError inside an error's text.
func withoutObject(err error) (identity []any, cause error) {
	var ke KeyError
	if !errors.As(err, &ke) {
		return nil, err
	}
	identity = []any{"type", fmt.Sprintf("%T", ke.Obj)}
	if m, ok := objmeta.Of(ke.Obj); ok {
		identity = append(identity, "namespace", m.GetNamespace(), "name", m.GetName())
	}
	return identity, ke.Err
}

// withoutObjects returns err for a log line of ours: the text of every
// KeyError in it is replaced by what identifies the object (its key, or
// just its type) and the error's cause. A KeyError's own text prints the
// whole object, and a Secret's data has no place in a log. errors.Is and
// errors.As still see err through the result.
func withoutObjects(err error) error {
	msg := err.Error()
	changed := false
	eachError(err, func(e error) {
		var ke KeyError
		switch v := e.(type) {
		case KeyError:
			ke = v
		case *KeyError:
			if v == nil {
				return
			}
			ke = *v
		default:
			return
		}
		safe := fmt.Sprintf("couldn't create key for object %s: %v", objectIdentity(ke.Obj), ke.Err)
		if full := ke.Error(); strings.Contains(msg, full) {
			msg = strings.ReplaceAll(msg, full, safe)
			changed = true
		}
	})
	if !changed {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// eachError calls f on err and every error it wraps, outermost first.
func eachError(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		eachError(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			eachError(e, f)
		}
	}
}

// objectIdentity names an object without its contents: its type and, when
// it has one, its namespace/name key (a tombstone's or the newest delta's
// object's for those wrappers).
func objectIdentity(obj interface{}) string {
	switch o := obj.(type) {
	case DeletedFinalStateUnknown:
		return fmt.Sprintf("%q (a DeletedFinalStateUnknown)", o.Key)
	case Deltas:
		if newest := o.Newest(); newest != nil {
			return objectIdentity(newest.Object) + " (in Deltas)"
		}
		return "(empty Deltas)"
	}
	if p, err := metaKeyParts(obj); err == nil {
		return fmt.Sprintf("%q of type %T", p.key(), obj)
	}
	return fmt.Sprintf("of type %T", obj)
}

// redactedError is an error with another text, wrapping the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
