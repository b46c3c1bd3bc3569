package compact

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openinformer/cache/internal/fixtures"
)

// appendSize is what the runtime allocates for n bytes: append from nil
// rounds the capacity up to the allocation's real size.
func appendSize(n int) int { return cap(append([]byte(nil), make([]byte, n)...)) }

func TestSizeClassesAreTheRuntimes(t *testing.T) {
	prev := 0
	for _, c := range sizeClasses {
		class := int(c)
		assert.Equal(t, class, appendSize(class), "class %d", class)
		assert.Equal(t, class, appendSize(prev+1), "%d bytes take class %d", prev+1, class)
		assert.Equal(t, class, allocSize(prev+1))
		prev = class
	}
	for _, n := range []int{maxSmallSize + 1, 5*pageSize + 1, 6 * pageSize, 100_000} {
		assert.Equal(t, appendSize(n), allocSize(n), "%d bytes", n)
	}
}

// A split fills its first piece's class exactly and saves at least
// minSplitSaving over one allocation.
func TestSplitAtSaves(t *testing.T) {
	splits := 0
	for n := 1; n < 3*maxSmallSize; n++ {
		at := splitAt(n)
		if at == n {
			continue
		}
		splits++
		if at != allocSize(at) || at+allocSize(n-at) > allocSize(n)-minSplitSaving {
			t.Fatalf("%d bytes split at %d: %d + %d, one piece %d", n, at, at, allocSize(n-at), allocSize(n))
		}
	}
	assert.NotZero(t, splits)
	assert.Equal(t, 10240, splitAt(10300), "a 10.3 KB pod: 10240 + 64, not 10880")
	assert.Equal(t, 40, splitAt(40), "small encodings stay whole")
	assert.Equal(t, 5*pageSize, splitAt(5*pageSize+100), "whole pages and a small piece")
}

// realisticPod is a pod as an informer holds it, whose encoding is stored
// in two pieces.
func realisticPod(t testing.TB) (*Codec, runtime.Object, Encoding) {
	pod := fromWire(t, fixtures.Pods(17, 1)[0])
	c, err := NewCodec(pod, Options{})
	require.NoError(t, err)
	e, err := c.Encode(pod)
	require.NoError(t, err)
	require.NotZero(t, e.tailLen, "the fixture pod is stored in two pieces")
	return c, pod, e
}

func TestEncodingPieces(t *testing.T) {
	c, pod, e := realisticPod(t)
	var want bytes.Buffer
	want.WriteByte(byte(Protobuf))
	require.NoError(t, c.serializers[Protobuf].Encode(pod, &want))
	assert.Equal(t, want.Bytes(), e.Bytes(), "the raw serializer's bytes behind the header")
	assert.Equal(t, int(e.headLen), allocSize(int(e.headLen)), "the first piece fills its class")
	assert.Equal(t, want.Len(), e.Len())
	id := e.Identity()
	assert.True(t, sameBytes(id, e.Identity()), "one identity")
	again, err := c.Encode(pod)
	require.NoError(t, err)
	assert.False(t, sameBytes(id, again.Identity()), "each encoding its own")
}

// Decoding through a scratch buffer leaves nothing of the object in it:
// the decoders copy every string and byte slice out, so the buffer can be
// reused at once. Checked for each format, on the first fixture whose
// encoding is in two pieces.
func TestDecodedObjectSharesNoMemoryWithScratch(t *testing.T) {
	sets := fixtureSets(t)
	for _, tc := range []struct {
		set    string
		format Format
	}{{"pods", Protobuf}, {"pods", CBOR}, {"pods", JSON}, {"custom", CBOR}, {"custom", JSON}} {
		objs := sets[tc.set]
		c, err := NewCodec(objs[0], Options{Format: tc.format})
		require.NoError(t, err)
		split := false
		for _, obj := range objs {
			e, err := c.Encode(obj)
			require.NoError(t, err)
			if e.tailLen == 0 {
				continue
			}
			split = true
			s := getScratch(e.Len())
			got, err := c.decodeWith(s, e)
			require.NoError(t, err)
			used := s.buf.AvailableBuffer()
			used = used[:cap(used)]
			require.True(t, bytes.Equal(e.Bytes(), used[:e.Len()]), "the pieces were joined in the scratch")
			for i := range used {
				used[i] = 0xAA
			}
			if !reflect.DeepEqual(obj, got) {
				t.Fatalf("%s %v: overwriting the scratch changed the object: %s", tc.set, tc.format, objDiff(obj, got))
			}
			break
		}
		assert.True(t, split, "%s %v: no encoding in two pieces", tc.set, tc.format)
	}
}

// assertAllocs checks that f allocates want times; under the race
// detector, pooled buffers add up to extra now and then.
func assertAllocs(t *testing.T, want float64, extra float64, f func(), msg string) {
	t.Helper()
	got := testing.AllocsPerRun(50, f)
	if raceEnabled {
		assert.InDelta(t, want+extra/2, got, extra/2, msg)
		return
	}
	assert.Equal(t, want, got, msg)
}

// Encode allocates its pieces and nothing beyond what the generated
// marshaler allocates itself; Decode allocates only the object.
func TestCodecAllocations(t *testing.T) {
	for name, obj := range benchObjects(t) {
		c, err := NewCodec(obj, Options{})
		require.NoError(t, err)
		m := obj.(generated)
		buf := make([]byte, m.Size())
		marshal := testing.AllocsPerRun(50, func() { _, _ = m.MarshalToSizedBuffer(buf[:m.Size()]) })
		e, err := c.Encode(obj)
		require.NoError(t, err)
		pieces := 1.0
		if e.tailLen > 0 {
			pieces = 2
		}
		assertAllocs(t, marshal+pieces, 2, func() { _, _ = c.Encode(obj) }, name+": Encode")

		body := e.Bytes()[1:]
		unmarshal := testing.AllocsPerRun(50, func() {
			_ = reflect.New(c.typ.Elem()).Interface().(generated).Unmarshal(body)
		})
		assertAllocs(t, unmarshal, 2, func() { _, _ = c.Decode(e) }, name+": Decode")
	}
}

// A tiny pod's encoding is one allocation, and its decoding allocates the
// pod, its label map and its strings.
func TestTinyPodAllocations(t *testing.T) {
	c, err := NewCodec(tinyPod(), Options{})
	require.NoError(t, err)
	pod := tinyPod()
	assert.Equal(t, 1.0, testing.AllocsPerRun(50, func() { _, _ = c.Encode(pod) }))
	e, err := c.Encode(pod)
	require.NoError(t, err)
	assert.Equal(t, 8.0, testing.AllocsPerRun(50, func() { _, _ = c.Decode(e) }))
}
