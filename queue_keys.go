package cache

import "fmt"

// queueKeyer computes keys for the queues. When the key function is one of
// this package's namespace/name functions, it reads a key's parts from the
// object's metadata, so a queue can check that a key exists, or compare and
// hash keys, without building the string.
type queueKeyer struct {
	keyFunc  KeyFunc
	metaKeys bool
	// unwrapDelta makes a bare Delta stand for its object, as RealFIFO's
	// keys do; DeltaFIFO hands a Delta to the key function unchanged.
	unwrapDelta bool
}

func newQueueKeyer(keyFunc KeyFunc) queueKeyer {
	if keyFunc == nil {
		keyFunc = MetaNamespaceKeyFunc
	}
	return queueKeyer{keyFunc: keyFunc, metaKeys: isMetaNamespaceKeyFunc(keyFunc)}
}

// unwrap returns the object whose key stands for obj: the newest object of a
// Deltas, the object of a Delta, or obj itself.
func (k queueKeyer) unwrap(obj interface{}) (interface{}, error) {
	switch d := obj.(type) {
	case Deltas:
		if len(d) == 0 {
			return nil, KeyError{Obj: obj, Err: ErrZeroLengthDeltasObject}
		}
		return d[len(d)-1].Object, nil
	case Delta:
		if k.unwrapDelta {
			return d.Object, nil
		}
	}
	return obj, nil
}

// partsOf returns the parts of obj's key; a tombstone carries its own key.
func (k queueKeyer) partsOf(obj interface{}) (keyParts, error) {
	obj, err := k.unwrap(obj)
	if err != nil {
		return keyParts{}, err
	}
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		return partsOfKey(d.Key), nil
	}
	if k.metaKeys {
		return metaKeyParts(obj)
	}
	key, err := k.keyFunc(obj)
	if err != nil {
		return keyParts{}, err
	}
	return partsOfKey(key), nil
}

// keyOf returns the key of obj.
func (k queueKeyer) keyOf(obj interface{}) (string, error) {
	p, err := k.partsOf(obj)
	if err != nil {
		return "", err
	}
	return p.key(), nil
}

// check returns the error keyOf would return, without building the key when
// the key function is known.
func (k queueKeyer) check(obj interface{}) error {
	_, err := k.partsOf(obj)
	return err
}

// listedObject returns the key of an object of a relist and the object as
// it is queued, transformed when transform is not nil.
func (k queueKeyer) listedObject(obj interface{}, transform TransformFunc) (string, interface{}, error) {
	key, err := k.keyOf(obj)
	if err != nil {
		return "", nil, KeyError{Obj: obj, Err: err}
	}
	if transform == nil {
		return key, obj, nil
	}
	stored, err := transform(obj)
	if err != nil {
		return "", nil, fmt.Errorf("couldn't enqueue object: %w", err)
	}
	return key, stored, nil
}
