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
	"reflect"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/openinformer/cache/internal/coldtier"
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
	// Tag tells the codec's encodings apart from other codecs' kept in the
	// same place (TagOf); a tag other than 0 costs a byte or more each.
	Tag uint32
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
	tag          uint32
	// dict is the cold tier's dictionary (cold.go), made once by
	// MakeDictionary; nil before.
	dict atomic.Pointer[coldtier.Dictionary]
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

// kindless is a scheme that registers nothing: its serializers read and
// write TypeMeta as a plain field.
var kindless = runtime.NewScheme()

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
	switch prototype.(type) {
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		// Its TypeMeta, or its items', names the kind of the object
		// described (none, meta.k8s.io's PartialObjectMetadata, or the
		// resource's own kind, as controller-runtime sets it), not a kind
		// of the Go type: a scheme registering the type would refuse the
		// resource's kind, or drop TypeMeta in protobuf, so TypeMeta is
		// kept as it is, in JSON, whatever the scheme registers.
		s = kindless
	}
	c := &Codec{typ: reflect.TypeOf(prototype), compressor: opts.Compressor, tag: opts.Tag}
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
	flags := c.flagsFor(obj)
	if m, ok := obj.(generated); ok && c.format == Protobuf && c.compressor == nil {
		return c.encodeGenerated(flags, m)
	}
	s := getScratch(0)
	defer s.release()
	if err := c.serializers[c.format].Encode(obj, &s.buf); err != nil {
		return Encoding{}, fmt.Errorf("compact: encoding %T as %v: %w", obj, c.format, err)
	}
	if c.compressor != nil {
		packed := getScratch(s.buf.Len() / 2)
		defer packed.release()
		if c.compressor.compress(&packed.buf, s.buf.Bytes()) {
			return newEncoding(flags|flagCompressed, c.tag, packed.buf.Bytes())
		}
	}
	return newEncoding(flags, c.tag, s.buf.Bytes())
}

// encodeGenerated marshals m straight into its encoding's one piece, or
// through a scratch buffer when the encoding is in several.
func (c *Codec) encodeGenerated(flags byte, m generated) (Encoding, error) {
	e, p, err := allocEncoding(flags, c.tag, m.Size())
	if err != nil {
		return Encoding{}, err
	}
	if p[1] == nil {
		return e, marshalInto(m, p[0])
	}
	n := e.Len()
	s := getScratch(n)
	defer s.release()
	data := s.buf.AvailableBuffer()[:n]
	if err := marshalInto(m, data); err != nil {
		return Encoding{}, err
	}
	p.fill(data)
	return e, nil
}

// marshalInto writes m into data, which is exactly its size.
func marshalInto(m generated, data []byte) error {
	written, err := m.MarshalToSizedBuffer(data)
	if err == nil && written != len(data) {
		err = fmt.Errorf("%d bytes written of the %d its size promised", written, len(data))
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

// flagsFor picks the encoding's flags: whether protobuf, which drops
// TypeMeta, must restore it.
func (c *Codec) flagsFor(obj runtime.Object) byte {
	if c.format == Protobuf && !obj.GetObjectKind().GroupVersionKind().Empty() {
		return flagTypeMeta
	}
	return 0
}

// TagOf is the tag of the codec that made e (Options.Tag).
func TagOf(e Encoding) uint32 { return e.layout().tag }

// Decode returns a fresh object equal to the one e was encoded from. An
// Encoding in several pieces is joined in a reused buffer.
func (c *Codec) Decode(e Encoding) (runtime.Object, error) {
	if e.p == nil {
		return nil, errors.New("compact: decoding an empty Encoding")
	}
	l := e.layout()
	if l.tag != c.tag {
		return nil, fmt.Errorf("%w: an encoding of tag %d, not %d", ErrWrongType, l.tag, c.tag)
	}
	if l.heads == 0 {
		return c.decodeBody(l.flags, e.last(&l))
	}
	s := getScratch(l.length)
	defer s.release()
	return c.decodeWith(s, e, &l)
}

// decodeWith is Decode of e, laid out as l says, joined in s.
func (c *Codec) decodeWith(s *scratch, e Encoding, l *layout) (runtime.Object, error) {
	return c.decodeBody(l.flags, e.joined(l, s))
}

// decodeBody decodes body, with flags, into a fresh object that keeps no
// part of body, so that body may be reused: decompressing makes new bytes,
// protobuf's generated code copies every string and byte slice out, and
// the serializers' decoders copy too (json.Unmarshaler and
// cbor.Unmarshaler implementations must copy what they keep).
func (c *Codec) decodeBody(flags byte, body []byte) (runtime.Object, error) {
	if flags&flagCompressed == 0 {
		return c.decode(flags, body)
	}
	if c.compressor == nil {
		return c.decodeCold(flags, body)
	}
	body, err := c.compressor.decompress(body)
	if err != nil {
		return nil, err
	}
	return c.decode(flags, body)
}

// decodeCold decodes body, compressed with the codec's dictionary, through
// a reused buffer.
func (c *Codec) decodeCold(flags byte, body []byte) (runtime.Object, error) {
	s := getScratch(coldRoom(len(body)))
	defer s.release()
	plain, err := c.decompressCold(s.buf.AvailableBuffer(), body)
	if err != nil {
		return nil, err
	}
	return c.decode(flags, plain)
}

// decode turns body, in the codec's format, into a fresh object.
func (c *Codec) decode(flags byte, body []byte) (runtime.Object, error) {
	format := c.format
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
	if flags&flagTypeMeta != 0 {
		// Protobuf does not carry TypeMeta; the header says it was set.
		into.GetObjectKind().SetGroupVersionKind(c.gvk)
	}
	return into, nil
}
