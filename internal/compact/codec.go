// Package compact holds the building blocks of compact storage, a cache mode
// that keeps each object as its encoded bytes instead of as a decoded tree of
// structs, maps and strings: a Codec choosing apimachinery's serializer for a
// type, optional compression of the stored bytes with a shared dictionary,
// and a bounded HotCache of recently decoded objects. None of it depends on
// how a store lays out its entries.
package compact

import (
	"errors"
	"fmt"
	"math"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// Format is the encoding of stored bytes.
type Format uint8

// The formats, in the order Auto prefers them.
const (
	// Auto picks Protobuf for types that support it, CBOR for other types
	// the scheme knows and for unstructured objects, JSON for the rest.
	Auto Format = iota
	Protobuf
	CBOR
	JSON
)

// String names the format.
func (f Format) String() string {
	switch f {
	case Protobuf:
		return "protobuf"
	case CBOR:
		return "cbor"
	case JSON:
		return "json"
	default:
		return "auto"
	}
}

// The first byte of every encoding says how to read the rest: the format in
// the low bits and two flags.
const (
	formatMask byte = 0x03
	// flagTypeMeta marks a typed object whose TypeMeta was set to the codec's
	// kind: protobuf does not carry TypeMeta, so it is restored from this.
	flagTypeMeta byte = 0x04
	// flagCompressed marks bytes compressed with the codec's Compressor.
	flagCompressed byte = 0x08
)

// Options configure a Codec.
type Options struct {
	// Scheme resolves the kinds of typed objects; client-go's scheme when nil.
	Scheme *runtime.Scheme
	// Format forces an encoding; Auto (the zero value) chooses per type.
	// Types without protobuf support fall back from Protobuf to CBOR, and
	// types the scheme does not know fall back to JSON.
	Format Format
	// Compressor, when set, compresses each encoding that it makes smaller.
	Compressor *Compressor
}

// Codec turns objects of one Go type into compact bytes and back. Decode
// always returns a fresh object that shares no memory with the bytes or with
// earlier results. A Codec is safe for concurrent use.
type Codec struct {
	format       Format
	typ          reflect.Type
	gvk          schema.GroupVersionKind
	unstructured bool
	serializers  [4]runtime.Serializer
	compressor   *Compressor
}

// generated is what protobuf's generated code gives every built-in API
// type; the raw protobuf serializer calls the same methods.
type generated interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// ErrWrongType is returned when a Codec is given an object of another type
// than the one it was made for.
var ErrWrongType = errors.New("compact: object of a different type than the codec's")

// ErrKind is returned for an object whose apiVersion and kind could not be
// read back: an unstructured object without them, or a typed object whose
// TypeMeta is neither empty nor the kind the scheme gives its type. Objects
// from the API server never have either.
var ErrKind = errors.New("compact: apiVersion and kind would not survive encoding")

// NewCodec returns a Codec for objects of prototype's Go type, which must be
// a pointer to a struct, as every runtime.Object is.
func NewCodec(prototype runtime.Object, opts Options) (*Codec, error) {
	if t := reflect.TypeOf(prototype); t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("compact: a codec needs a pointer to a struct as its prototype, not %T", prototype)
	}
	s := opts.Scheme
	if s == nil {
		s = scheme.Scheme
	}
	c := &Codec{typ: reflect.TypeOf(prototype), compressor: opts.Compressor}
	_, c.unstructured = prototype.(*unstructured.Unstructured)
	registered := false
	if !c.unstructured {
		if kinds, _, err := s.ObjectKinds(prototype); err == nil {
			c.gvk, registered = kinds[0], true
		}
	}
	c.serializers = [4]runtime.Serializer{
		Protobuf: protobuf.NewRawSerializer(s, s),
		CBOR:     cbor.NewSerializer(s, s),
		JSON:     json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{}),
	}
	c.format = choose(opts.Format, prototype, registered || c.unstructured)
	return c, nil
}

// choose settles the format: protobuf needs the generated marshaler and CBOR
// a kind the scheme resolves (or an unstructured object).
func choose(want Format, prototype runtime.Object, known bool) Format {
	_, proto := prototype.(generated)
	switch {
	case (want == Auto || want == Protobuf) && proto && known:
		return Protobuf
	case (want == Auto || want == Protobuf || want == CBOR) && known:
		return CBOR
	default:
		return JSON
	}
}

// Format is the encoding the codec writes.
func (c *Codec) Format() Format { return c.format }

// Encode returns obj's compact bytes. A protobuf type is marshaled by its
// generated code straight into the bytes kept; other encodings go through
// a reused buffer.
func (c *Codec) Encode(obj runtime.Object) (Encoding, error) {
	if reflect.TypeOf(obj) != c.typ {
		return Encoding{}, fmt.Errorf("%w: %T, not %v", ErrWrongType, obj, c.typ)
	}
	if err := c.checkKind(obj); err != nil {
		return Encoding{}, err
	}
	header := c.headerFor(obj)
	if m, ok := obj.(generated); ok && c.format == Protobuf && c.compressor == nil {
		return c.encodeGenerated(header, m)
	}
	s := getScratch(0)
	defer s.release()
	s.buf.WriteByte(header)
	if err := c.serializers[c.format].Encode(obj, &s.buf); err != nil {
		return Encoding{}, fmt.Errorf("compact: encoding %T as %v: %w", obj, c.format, err)
	}
	if c.compressor != nil {
		packed := getScratch(s.buf.Len() / 2)
		defer packed.release()
		if c.compressor.compress(&packed.buf, header|flagCompressed, s.buf.Bytes()[1:]) {
			return newEncoding(packed.buf.Bytes())
		}
	}
	return newEncoding(s.buf.Bytes())
}

// encodeGenerated marshals m behind header: into one allocation of the
// exact size when that fills its size class well, else through a scratch
// buffer into the two pieces splitAt chooses.
func (c *Codec) encodeGenerated(header byte, m generated) (Encoding, error) {
	n := 1 + m.Size()
	if n > math.MaxUint32 {
		return Encoding{}, ErrTooLarge
	}
	if splitAt(n) == n {
		data := make([]byte, n)
		if err := marshalBehind(header, m, data); err != nil {
			return Encoding{}, err
		}
		return whole(data), nil
	}
	s := getScratch(n)
	defer s.release()
	data := s.buf.AvailableBuffer()[:n]
	if err := marshalBehind(header, m, data); err != nil {
		return Encoding{}, err
	}
	return newEncoding(data)
}

// marshalBehind writes header and then m into data, which is exactly
// their size.
func marshalBehind(header byte, m generated, data []byte) error {
	data[0] = header
	written, err := m.MarshalToSizedBuffer(data[1:])
	if err == nil && written != len(data)-1 {
		err = fmt.Errorf("%d bytes written of the %d its size promised", written, len(data)-1)
	}
	if err != nil {
		return fmt.Errorf("compact: encoding %T as protobuf: %w", m, err)
	}
	return nil
}

// checkKind refuses objects whose decoding would fail or come back as
// another kind.
func (c *Codec) checkKind(obj runtime.Object) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	switch {
	case c.unstructured && (gvk.Kind == "" || gvk.Version == ""):
	case !c.unstructured && !c.gvk.Empty() && !gvk.Empty() && gvk != c.gvk:
	default:
		return nil
	}
	return fmt.Errorf("%w: %T with apiVersion %q and kind %q", ErrKind, obj, gvk.GroupVersion(), gvk.Kind)
}

// headerFor picks the header byte: the format, and whether protobuf, which
// drops TypeMeta, must restore it.
func (c *Codec) headerFor(obj runtime.Object) byte {
	if c.format == Protobuf && !obj.GetObjectKind().GroupVersionKind().Empty() {
		return byte(Protobuf) | flagTypeMeta
	}
	return byte(c.format)
}

// Decode returns a fresh object equal to the one e was encoded from. An
// Encoding in two pieces is joined in a reused buffer.
func (c *Codec) Decode(e Encoding) (runtime.Object, error) {
	if e.Len() == 0 {
		return nil, errors.New("compact: decoding empty data")
	}
	if e.tailLen == 0 {
		return c.decodeBody(*e.head, e.Identity()[1:])
	}
	s := getScratch(e.Len())
	defer s.release()
	return c.decodeWith(s, e)
}

// decodeWith is Decode of e joined in s.
func (c *Codec) decodeWith(s *scratch, e Encoding) (runtime.Object, error) {
	return c.decodeBody(*e.head, e.joined(s)[1:])
}

// decodeBody decodes body, which follows header, into a fresh object that
// keeps no part of body, so that body may be reused: decompressing makes
// new bytes, protobuf's generated code copies every string and byte slice
// out, and the serializers' decoders copy too (json.Unmarshaler and
// cbor.Unmarshaler implementations must copy what they keep).
func (c *Codec) decodeBody(header byte, body []byte) (runtime.Object, error) {
	if header&flagCompressed != 0 {
		if c.compressor == nil {
			return nil, errors.New("compact: compressed data and no compressor")
		}
		var err error
		if body, err = c.compressor.decompress(body); err != nil {
			return nil, err
		}
	}
	return c.decode(header, body)
}

// decode turns body, in the format header names, into a fresh object.
func (c *Codec) decode(header byte, body []byte) (runtime.Object, error) {
	format := Format(header & formatMask)
	into := reflect.New(c.typ.Elem()).Interface().(runtime.Object)
	var err error
	if m, ok := into.(generated); ok && format == Protobuf {
		err = m.Unmarshal(body)
	} else {
		_, _, err = c.serializers[format].Decode(body, &c.gvk, into)
	}
	if err != nil {
		return nil, fmt.Errorf("compact: decoding %v as %v: %w", c.typ, format, err)
	}
	if header&flagTypeMeta != 0 {
		// Protobuf does not carry TypeMeta; the header says it was set.
		into.GetObjectKind().SetGroupVersionKind(c.gvk)
	}
	return into, nil
}
