package compact

import (
	"compress/flate"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestDictionaryMakesSmallObjectsSmaller(t *testing.T) {
	objs := fixtureSets(t)["configmaps"]
	plain, err := NewCodec(objs[0], Options{})
	require.NoError(t, err)
	noDict, err := NewCompressor(flate.BestSpeed, nil)
	require.NoError(t, err)
	withDict, err := NewCompressor(2, Dictionary(samples(t, plain, objs[:3]), 32<<10))
	require.NoError(t, err)
	a, err := NewCodec(objs[0], Options{Compressor: noDict})
	require.NoError(t, err)
	b, err := NewCodec(objs[0], Options{Compressor: withDict})
	require.NoError(t, err)

	obj := objs[len(objs)-1] // not among the dictionary's samples
	raw, err := plain.Encode(obj)
	require.NoError(t, err)
	small, err := a.Encode(obj)
	require.NoError(t, err)
	smaller, err := b.Encode(obj)
	require.NoError(t, err)
	assert.Less(t, small.Len(), raw.Len())
	assert.Less(t, smaller.Len(), small.Len())
	assert.NotZero(t, small.layout().flags&flagCompressed)
}

func TestIncompressibleBytesAreStoredPlain(t *testing.T) {
	noise := make([]byte, 2048)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte('a' + r.IntN(26))
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x/v1", "kind": "K", "n": string(noise[:8])}}
	comp, err := NewCompressor(flate.BestSpeed, nil)
	require.NoError(t, err)
	c, err := NewCodec(obj, Options{Compressor: comp})
	require.NoError(t, err)
	data, err := c.Encode(obj)
	require.NoError(t, err)
	assert.Zero(t, data.layout().flags&flagCompressed, "a tiny object does not shrink")
	got, err := c.Decode(data)
	require.NoError(t, err)
	assert.Equal(t, obj, got)
}

func TestDictionaryKeepsDeflateWindow(t *testing.T) {
	big := make([]byte, 40<<10)
	assert.Len(t, Dictionary([][]byte{big}, 64<<10), 32<<10, "never more than the window")
	d := Dictionary([][]byte{[]byte("first"), []byte("second")}, 100)
	assert.Equal(t, "secondfirst", string(d), "the first sample nearest the data")
	assert.Equal(t, "ndfirst", string(Dictionary([][]byte{[]byte("first"), []byte("second")}, 7)), "cut from the front")
	_, err := NewCompressor(42, nil)
	assert.Error(t, err)
	_, err = NewCompressor(flate.BestSpeed, d)
	assert.ErrorContains(t, err, "ignores a dictionary")
}
