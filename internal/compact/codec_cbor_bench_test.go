package compact

import (
	"testing"

	"github.com/openinformer/cache/internal/fixtures"
)

// BenchmarkCBOR encodes and decodes an unstructured custom resource of
// ~10 KB, which goes through apimachinery's CBOR serializer.
func BenchmarkCBOR(b *testing.B) {
	obj := fromWire(b, fixtures.CustomResources(17, 1)[0])
	c, err := NewCodec(obj, Options{})
	if err != nil {
		b.Fatal(err)
	}
	e, err := c.Encode(obj)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Encode(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Decode(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
