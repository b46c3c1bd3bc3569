package cache

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	clientcache "k8s.io/client-go/tools/cache"
)

// unkeyableKnown is a consumer's store holding one object the queue's key
// function refuses.
type unkeyableKnown struct{}

func (unkeyableKnown) ListKeys() []string { return []string{"ns/bad"} }
func (unkeyableKnown) GetByKey(string) (interface{}, bool, error) {
	return "bad", true, nil
}

var errNoKey = errors.New("no key")

func refuseStrings(obj interface{}) (string, error) {
	if _, ok := obj.(string); ok {
		return "", errNoKey
	}
	return MetaNamespaceKeyFunc(obj)
}

// A Resync that cannot queue a known object returns an error wrapping the
// real cause, as client-go v0.38 does. client-go v0.37 wrapped a nil error
// there ("%!w(<nil>)"); ours wraps the cause on both minors.
func TestRealFIFOResyncErrorWrapsTheCause(t *testing.T) {
	ours := NewRealFIFOWithOptions(RealFIFOOptions{KeyFunction: refuseStrings, KnownObjects: unkeyableKnown{}}).Resync()
	theirs := clientcache.NewRealFIFOWithOptions(clientcache.RealFIFOOptions{KeyFunction: refuseStrings, KnownObjects: unkeyableKnown{}}).Resync()
	var keyErr KeyError
	assert.ErrorAs(t, ours, &keyErr)
	assert.ErrorIs(t, ours, errNoKey)
	assert.EqualError(t, ours, "couldn't queue object: "+(KeyError{Obj: "bad", Err: errNoKey}).Error())
	if clientGoV038 {
		assert.EqualError(t, ours, theirs.Error())
	} else {
		assert.EqualError(t, theirs, "couldn't queue object: %!w(<nil>)")
	}
}
