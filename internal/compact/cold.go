package compact

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/openinformer/cache/internal/coldtier"
)

// The cold tier: an encoding nobody has read or written for a while is
// compressed with a dictionary made from the codec's own encodings
// (package coldtier), and its flagCompressed then means that dictionary,
// not a Compressor: a codec has either, never both (Cool refuses a codec
// with a Compressor). The dictionary is made once, from the first samples
// offered, and never replaced, so every cold encoding of a codec is
// decompressed by the one dictionary it was made with.

// errNoDictionary is returned for a cold encoding of a codec that never
// made a dictionary: it cannot have been made by this codec.
var errNoDictionary = errors.New("compact: a cold encoding, and the codec has no dictionary")

// Cold reports whether e is an encoding Cool made, compressed with the
// codec's dictionary.
func (c *Codec) Cold(e Encoding) bool {
	return c.compressor == nil && e.Compressed()
}

// HasDictionary reports whether the codec has made or adopted its
// dictionary, so that Cool can compress.
func (c *Codec) HasDictionary() bool { return c.dict.Load() != nil }

// DictionarySize is the size of the codec's dictionary's content; 0
// without one.
func (c *Codec) DictionarySize() int {
	if d := c.dict.Load(); d != nil {
		return d.Size()
	}
	return 0
}

// DictionaryBytes returns the codec's dictionary as a snapshot keeps it
// beside its cold records (coldtier.Dictionary.Bytes); nil without one.
func (c *Codec) DictionaryBytes() []byte {
	if d := c.dict.Load(); d != nil {
		return d.Bytes()
	}
	return nil
}

// errOtherDictionary is a dictionary offered to a codec that has another:
// its cold encodings would not read back.
var errOtherDictionary = errors.New("compact: the codec has another dictionary")

// AdoptDictionary makes data, DictionaryBytes of another codec of the same
// type (a restart snapshot's), the codec's dictionary, so that cold
// encodings made with it read back, and the codec's own go cold with it
// too. A codec that has a dictionary already keeps it, and then data must
// be that very dictionary.
func (c *Codec) AdoptDictionary(data []byte) error {
	if c.compressor != nil {
		return errors.New("compact: a codec with a Compressor has no cold tier")
	}
	if c.dict.Load() == nil {
		d, err := coldtier.Load(data)
		if err != nil {
			return fmt.Errorf("compact: %w", err)
		}
		if !c.dict.CompareAndSwap(nil, d) {
			d.Close()
		}
	}
	if !bytes.Equal(c.DictionaryBytes(), data) {
		return errOtherDictionary
	}
	return nil
}

// MakeDictionary makes the codec's dictionary from samples, typical
// encodings of its own, most typical first (coldtier.Train), unless it has
// one already; size 0 is coldtier.DefaultSize. It returns the size of the
// dictionary it made, 0 if none.
func (c *Codec) MakeDictionary(samples []Encoding, size int) (int, error) {
	if c.compressor != nil {
		return 0, errors.New("compact: a codec with a Compressor has no cold tier")
	}
	if c.HasDictionary() {
		return 0, nil
	}
	bodies := make([][]byte, 0, len(samples))
	for _, e := range samples {
		if !c.Cold(e) {
			bodies = append(bodies, e.Bytes())
		}
	}
	d, err := coldtier.Train(bodies, size)
	if err != nil {
		return 0, err
	}
	if !c.dict.CompareAndSwap(nil, d) {
		d.Close()
		return 0, nil
	}
	return d.Size(), nil
}

// Cool returns e compressed with the codec's dictionary, and false when
// that would not make it smaller (or the codec has no dictionary yet, or e
// is cold already): e is then kept as it is.
func (c *Codec) Cool(e Encoding) (Encoding, bool, error) {
	d := c.dict.Load()
	l := e.layout()
	if d == nil || l.flags&flagCompressed != 0 || l.tag != c.tag {
		return Encoding{}, false, nil
	}
	in := getScratch(l.length)
	defer in.release()
	body := e.joined(&l, in)
	out := getScratch(coldtier.MaxRecordLen(len(body)))
	defer out.release()
	rec := d.Compress(out.buf.AvailableBuffer(), body)
	if len(rec) >= len(body) {
		return Encoding{}, false, nil
	}
	cold, err := newEncoding(l.flags|flagCompressed, c.tag, rec)
	return cold, err == nil, err
}

// Warm returns e decompressed, as Encode made it; e itself when it is not
// cold.
func (c *Codec) Warm(e Encoding) (Encoding, error) {
	l := e.layout()
	if c.compressor != nil || l.flags&flagCompressed == 0 {
		return e, nil
	}
	in := getScratch(l.length)
	defer in.release()
	out := getScratch(coldRoom(l.length))
	defer out.release()
	body, err := c.decompressCold(out.buf.AvailableBuffer(), e.joined(&l, in))
	if err != nil {
		return Encoding{}, err
	}
	return newEncoding(l.flags&^flagCompressed, c.tag, body)
}

// decompressCold appends what rec, a cold body, was compressed from to
// dst.
func (c *Codec) decompressCold(dst, rec []byte) ([]byte, error) {
	d := c.dict.Load()
	if d == nil {
		return dst, errNoDictionary
	}
	out, err := d.Decompress(dst, rec)
	if err != nil {
		return dst, fmt.Errorf("compact: cold encoding: %w", err)
	}
	return out, nil
}

// coldRoom is the room to decompress a cold body of n bytes into without
// growing: cold bodies are a tenth of their plain size or less, and a
// scratch buffer larger than maxPooled is not kept anyway.
func coldRoom(n int) int { return min(16*n, maxPooled) }
