package main

import (
	"compress/flate"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/internal/compact"
)

// compression is how an encoded variant compresses its bytes.
type compression int

const (
	compressNone compression = iota
	compressPlain
	compressDict
)

// byteStore stands in for a compact store: each object's bytes under its key
// and the namespace index computed at write time, so that ByIndex finds keys
// without decoding.
type byteStore struct {
	codec       *compact.Codec
	items       map[string]compact.Encoding
	byNamespace map[string][]string
}

func (b *byteStore) add(obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	data, err := b.codec.Encode(obj)
	if err != nil {
		return err
	}
	key := m.GetNamespace() + "/" + m.GetName()
	b.items[key] = data
	b.byNamespace[m.GetNamespace()] = append(b.byNamespace[m.GetNamespace()], key)
	return nil
}

// newByteStore builds the codec for src's objects, priming a dictionary from
// the first objects when asked.
func newByteStore(src *source, format compact.Format, strip bool, comp compression) (*byteStore, error) {
	opts := compact.Options{Format: format}
	var err error
	switch comp {
	case compressPlain:
		opts.Compressor, err = compact.NewCompressor(flate.BestSpeed, nil)
	case compressDict:
		var dict []byte
		if dict, err = sampleDictionary(src, format, strip); err == nil {
			opts.Compressor, err = compact.NewCompressor(dictLevel, dict)
		}
	}
	if err != nil {
		return nil, err
	}
	codec, err := compact.NewCodec(src.prototype(), opts)
	if err != nil {
		return nil, err
	}
	return &byteStore{codec: codec, items: map[string]compact.Encoding{}, byNamespace: map[string][]string{}}, nil
}

func sampleDictionary(src *source, format compact.Format, strip bool) ([]byte, error) {
	plain, err := compact.NewCodec(src.prototype(), compact.Options{Format: format})
	if err != nil {
		return nil, err
	}
	samples := make([][]byte, dictionarySamples)
	for i := range samples {
		e, err := plain.Encode(src.object(i, strip))
		if err != nil {
			return nil, err
		}
		samples[i] = e.Bytes()
	}
	return compact.Dictionary(samples, dictionarySize), nil
}

// object is src.wire(i), without managedFields when strip is set.
func (s *source) object(i int, strip bool) runtime.Object {
	obj := s.wire(i)
	if strip {
		return stripped(obj)
	}
	return obj
}

// stripped removes obj's managedFields in place and returns it.
func stripped(obj runtime.Object) runtime.Object {
	out, _ := cache.TransformStripManagedFields()(obj)
	return out.(runtime.Object)
}

func encoded(format compact.Format, strip bool, comp compression) func(*source, int) (any, error) {
	return func(src *source, n int) (any, error) {
		store, err := newByteStore(src, format, strip, comp)
		if err != nil {
			return nil, err
		}
		for i := range n {
			if err := store.add(src.object(i, strip)); err != nil {
				return nil, err
			}
		}
		return store, nil
	}
}
