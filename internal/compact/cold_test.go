package compact

import (
	"compress/flate"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

// encodeAll encodes objs with c.
func encodeAll(t *testing.T, c *Codec, objs []runtime.Object) []Encoding {
	t.Helper()
	out := make([]Encoding, len(objs))
	for i, obj := range objs {
		var err error
		out[i], err = c.Encode(obj)
		require.NoError(t, err)
	}
	return out
}

// Every kind of object goes cold smaller, decodes equal while cold, and
// warms back to its very bytes.
func TestCoolWarmRoundTrip(t *testing.T) {
	for name, objs := range fixtureSets(t) {
		t.Run(name, func(t *testing.T) {
			c, err := NewCodec(objs[0], Options{Tag: 3})
			require.NoError(t, err)
			encs := encodeAll(t, c, objs)
			_, ok, err := c.Cool(encs[0])
			require.NoError(t, err)
			assert.False(t, ok, "no dictionary yet")

			_, err = c.MakeDictionary(encs[:len(encs)/2], 0)
			require.NoError(t, err)
			for i, e := range encs {
				cold, ok, err := c.Cool(e)
				require.NoError(t, err)
				require.True(t, ok, "object %d", i)
				assert.True(t, c.Cold(cold))
				assert.False(t, c.Cold(e))
				assert.Less(t, cold.Len(), e.Len())
				assert.Equal(t, uint32(3), TagOf(cold))
				obj, err := c.Decode(cold)
				require.NoError(t, err)
				assert.True(t, equality.Semantic.DeepEqual(objs[i], obj), "object %d", i)
				warm, err := c.Warm(cold)
				require.NoError(t, err)
				assert.Equal(t, e.Bytes(), warm.Bytes())
				assert.Equal(t, e.AppendRecord(nil), warm.AppendRecord(nil))
				_, again, err := c.Cool(cold)
				require.NoError(t, err)
				assert.False(t, again, "cold already")
			}
		})
	}
}

// The dictionary is made once: a second call keeps the first, so every
// cold encoding stays readable.
func TestDictionaryMadeOnce(t *testing.T) {
	objs := fixtureSets(t)["pods"]
	c, err := NewCodec(objs[0], Options{})
	require.NoError(t, err)
	encs := encodeAll(t, c, objs)
	size, err := c.MakeDictionary(encs[:2], 0)
	require.NoError(t, err)
	assert.Positive(t, size)
	cold, ok, err := c.Cool(encs[3])
	require.NoError(t, err)
	require.True(t, ok)
	size, err = c.MakeDictionary(encs[4:], 0)
	require.NoError(t, err)
	assert.Zero(t, size, "kept the first")
	obj, err := c.Decode(cold)
	require.NoError(t, err)
	assert.True(t, equality.Semantic.DeepEqual(objs[3], obj))
}

// A codec with a Compressor has no cold tier, and a cold encoding is
// refused by a codec without the dictionary it was made with.
func TestColdRefusals(t *testing.T) {
	objs := fixtureSets(t)["configmaps"]
	comp, err := NewCompressor(flate.BestSpeed, nil)
	require.NoError(t, err)
	withCompressor, err := NewCodec(objs[0], Options{Compressor: comp})
	require.NoError(t, err)
	_, err = withCompressor.MakeDictionary(encodeAll(t, withCompressor, objs), 0)
	assert.Error(t, err)

	c, err := NewCodec(objs[0], Options{})
	require.NoError(t, err)
	encs := encodeAll(t, c, objs)
	_, err = c.MakeDictionary(encs, 0)
	require.NoError(t, err)
	cold, ok, err := c.Cool(encs[0])
	require.NoError(t, err)
	require.True(t, ok)
	other, err := NewCodec(objs[0], Options{})
	require.NoError(t, err)
	_, err = other.Decode(cold)
	assert.ErrorIs(t, err, errNoDictionary)
	_, err = other.Warm(cold)
	assert.ErrorIs(t, err, errNoDictionary)
}

// A cold record read back by another codec of the type, as a restart reads
// a snapshot: refused without the dictionary, read back equal once the
// codec adopted it, and its own encodings then go cold with it. A codec
// with a dictionary of its own refuses another, and takes its own again.
func TestAdoptDictionary(t *testing.T) {
	objs := fixtureSets(t)["pods"]
	writer, err := NewCodec(objs[0], Options{})
	require.NoError(t, err)
	assert.Nil(t, writer.DictionaryBytes())
	assert.Zero(t, writer.DictionarySize())
	encs := encodeAll(t, writer, objs)
	_, err = writer.MakeDictionary(encs, 0)
	require.NoError(t, err)
	cold, ok, err := writer.Cool(encs[1])
	require.NoError(t, err)
	require.True(t, ok)
	rec := cold.AppendRecord(nil)

	reader, err := NewCodec(objs[0], Options{Tag: 2})
	require.NoError(t, err)
	_, err = reader.FromRecord(rec)
	require.ErrorIs(t, err, errRecord, "no dictionary to read it with")
	dict := writer.DictionaryBytes()
	require.NoError(t, reader.AdoptDictionary(dict))
	assert.Equal(t, writer.DictionarySize(), reader.DictionarySize())
	loaded, err := reader.FromRecord(rec)
	require.NoError(t, err)
	assert.True(t, reader.Cold(loaded))
	obj, err := reader.Decode(loaded)
	require.NoError(t, err)
	assert.True(t, equality.Semantic.DeepEqual(objs[1], obj))
	obj, err = reader.DecodeRecord(rec)
	require.NoError(t, err)
	assert.True(t, equality.Semantic.DeepEqual(objs[1], obj))
	own, ok, err := reader.Cool(encodeAll(t, reader, objs[2:3])[0])
	require.NoError(t, err)
	require.True(t, ok, "the adopted dictionary cools the codec's own encodings")
	obj, err = writer.DecodeRecord(own.AppendRecord(nil))
	require.NoError(t, err, "with the same dictionary as the writer's")
	assert.True(t, equality.Semantic.DeepEqual(objs[2], obj))

	require.NoError(t, reader.AdoptDictionary(dict), "its own again")
	other, err := NewCodec(objs[0], Options{})
	require.NoError(t, err)
	_, err = other.MakeDictionary(encodeAll(t, other, objs[:2]), 0)
	require.NoError(t, err)
	assert.ErrorIs(t, other.AdoptDictionary(dict), errOtherDictionary)
	assert.Error(t, newCodecMust(t, objs[0]).AdoptDictionary(dict[:3]), "not a dictionary")
}

// newCodecMust is NewCodec for objects known to have a codec.
func newCodecMust(t *testing.T, prototype runtime.Object) *Codec {
	t.Helper()
	c, err := NewCodec(prototype, Options{})
	require.NoError(t, err)
	return c
}
