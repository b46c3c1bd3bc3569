package compact

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"sync"
)

// maxDictionary is DEFLATE's window: a preset dictionary longer than this is
// never referenced past its last 32 KB.
const maxDictionary = 32 << 10

// Compressor compresses stored bytes with DEFLATE (the standard library's
// compress/flate), optionally primed with a preset dictionary of typical
// encodings: small objects share most of their field names and values with
// their neighbours, not with themselves, so a dictionary is what makes
// compressing them one at a time pay. Writers and readers are pooled, since
// each costs hundreds of kilobytes to set up. A Compressor is safe for
// concurrent use.
type Compressor struct {
	level   int
	dict    []byte
	writers sync.Pool
	readers sync.Pool
}

// NewCompressor returns a Compressor at a compress/flate level (use
// flate.BestSpeed to flate.BestCompression) and with dict as its preset
// dictionary, which may be nil. The dictionary is copied; data compressed
// with one dictionary decompresses only with the same one. compress/flate
// ignores a dictionary at BestSpeed, so that pair is an error.
func NewCompressor(level int, dict []byte) (*Compressor, error) {
	if _, err := flate.NewWriter(io.Discard, level); err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	if len(dict) > 0 && level == flate.BestSpeed {
		return nil, errors.New("compact: compress/flate ignores a dictionary at BestSpeed; use level 2 or more")
	}
	if len(dict) > maxDictionary {
		dict = dict[len(dict)-maxDictionary:]
	}
	return &Compressor{level: level, dict: bytes.Clone(dict)}, nil
}

// Dictionary builds a preset dictionary of at most size bytes (capped at
// DEFLATE's 32 KB window) from sample encodings made by a Codec without a
// Compressor: the samples in reverse order, so that the first, which should
// be the most typical, ends nearest the data, where matches cost the fewest
// bits; what does not fit is cut from the front. Each compression primes its
// writer with the whole dictionary, so its size is paid on every Encode.
func Dictionary(samples [][]byte, size int) []byte {
	size = min(size, maxDictionary)
	var out []byte
	for i := len(samples) - 1; i >= 0; i-- {
		out = append(out, samples[i]...)
	}
	return out[max(0, len(out)-size):]
}

// compress writes data compressed to dst, and reports whether that is
// smaller than data.
func (c *Compressor) compress(dst *bytes.Buffer, data []byte) bool {
	w, _ := c.writers.Get().(*flate.Writer)
	if w == nil {
		// The level was checked by NewCompressor, so this cannot fail.
		w, _ = flate.NewWriterDict(dst, c.level, c.dict)
	} else {
		w.Reset(dst)
	}
	_, err := w.Write(data)
	if err == nil {
		err = w.Close()
	}
	c.writers.Put(w)
	return err == nil && dst.Len() < len(data)
}

// decompress reverses compress.
func (c *Compressor) decompress(data []byte) ([]byte, error) {
	src := bytes.NewReader(data)
	r, _ := c.readers.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReaderDict(src, c.dict)
	} else if err := r.(flate.Resetter).Reset(src, c.dict); err != nil {
		return nil, fmt.Errorf("compact: decompressing: %w", err)
	}
	defer c.readers.Put(r)
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("compact: decompressing: %w", err)
	}
	return out, nil
}
