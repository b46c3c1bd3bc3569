package cache

import (
	"errors"
	"fmt"
	"strings"

	"github.com/openinformer/cache/internal/keyparts"
	"github.com/openinformer/cache/internal/objmeta"
)

// The log-redaction policy: no log line of ours prints an object's
// contents, so an error that embeds an object is logged by what identifies
// it instead.

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
	if p, err := keyparts.Meta(obj); err == nil {
		return fmt.Sprintf("%q of type %T", p.Key(), obj)
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
