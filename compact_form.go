package cache

import (
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openinformer/cache/internal/compact"
)

// defaultHotObjects is the hot cache's size when CompactOptions leaves it 0:
// about 25 MB of typical pods, enough for the objects a controller works on
// at one time.
const defaultHotObjects = 1000

// compactForm is the storedForm of compact storage: the map holds each
// object as its encoding, and reads decode it, outside the store's lock,
// unless the hot cache still has the object decoded from those very bytes.
type compactForm struct {
	// codecs maps an object's Go type to its *compact.Codec. Informers
	// store one type, but a standalone Indexer may be given several.
	codecs sync.Map
	// hot is nil when the options turn the hot cache off.
	hot *compact.HotCache[any]
}

// compactHeld is what the store's map holds for an object in compact
// storage: 32 bytes. data is never modified once made: the hot cache
// recognises the object decoded from it by the identity of its first piece.
type compactHeld struct {
	codec *compact.Codec
	data  compact.Encoding
}

func newCompactForm(opts CompactOptions) *compactForm {
	f := &compactForm{}
	switch {
	case opts.HotObjects == 0:
		f.hot = compact.NewHotCache[any](defaultHotObjects)
	case opts.HotObjects > 0:
		f.hot = compact.NewHotCache[any](opts.HotObjects)
	}
	return f
}

// hold encodes obj. The caller's object itself goes into the hot cache, so
// that reading it back soon after the write, and the old object of the next
// update, cost no decode and are the very object that was written, as in
// the default mode.
func (f *compactForm) hold(key string, obj any) (any, error) {
	if h, ok := obj.(*compactHeld); ok {
		// Held ahead of a Replace (see preheld): adopted as it is.
		return h, nil
	}
	ro, ok := obj.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("compact storage keeps API objects (runtime.Object) only, not %T (key %q)", obj, key)
	}
	codec, err := f.codecFor(ro)
	if err != nil {
		return nil, fmt.Errorf("compact storage cannot keep %q: %w", key, err)
	}
	data, err := codec.Encode(ro)
	if err != nil {
		return nil, fmt.Errorf("compact storage cannot keep %q: %w", key, err)
	}
	if f.hot != nil {
		f.hot.Put(key, data.Identity(), obj)
	}
	return &compactHeld{codec: codec, data: data}, nil
}

// codecFor returns the codec for obj's Go type, made on first use.
func (f *compactForm) codecFor(obj runtime.Object) (*compact.Codec, error) {
	t := reflect.TypeOf(obj)
	if c, ok := f.codecs.Load(t); ok {
		return c.(*compact.Codec), nil
	}
	c, err := compact.NewCodec(obj, compact.Options{})
	if err != nil {
		return nil, err
	}
	actual, _ := f.codecs.LoadOrStore(t, c)
	return actual.(*compact.Codec), nil
}

// view returns the hot cache's object for held's bytes or a fresh decode of
// them, which goes into the hot cache unless a writer has put the key there
// (the bytes being viewed may be older than the writer's).
func (f *compactForm) view(key string, held any) (any, error) {
	h, ok := held.(*compactHeld)
	if !ok {
		return nil, fmt.Errorf("compact storage: %q holds a %T, not an encoding", key, held)
	}
	if f.hot != nil {
		if obj, ok := f.hot.Get(key, h.data.Identity()); ok {
			return obj, nil
		}
	}
	obj, err := h.codec.Decode(h.data)
	if err != nil {
		return nil, fmt.Errorf("compact storage cannot read %q back: %w", key, err)
	}
	if f.hot != nil {
		f.hot.Offer(key, h.data.Identity(), obj)
	}
	return obj, nil
}

// drop forgets key's decoded object, so that the hot cache does not keep a
// deleted object's memory alive.
func (f *compactForm) drop(key string) {
	if f.hot != nil {
		f.hot.Delete(key)
	}
}
