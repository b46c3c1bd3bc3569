package compact

import (
	"bytes"
	"math"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kruntime "k8s.io/apimachinery/pkg/runtime"

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
	for n := 1; n <= maxSmallSize; n++ {
		i, _ := slices.BinarySearch(sizeClasses[:], uint16(n))
		require.Equal(t, i, classOf(n), "%d bytes", n)
	}
	for _, n := range []int{maxSmallSize + 1, 5*pageSize + 1, 6 * pageSize, 100_000} {
		assert.Equal(t, appendSize(n), allocSize(n), "%d bytes", n)
	}
}

// A last piece of each size takes the allocation lastSize says: objects
// with pointers past 512 bytes carry a header word.
func TestLastPieceSizesAreTheRuntimes(t *testing.T) {
	const count = 64
	keep := make([]unsafe.Pointer, count)
	for _, n := range []int{24, 100, 504, 512, 513, 600, 1100, 4000, 10000} {
		for heads := 1; heads <= maxHeads; heads++ {
			newLast(heads, n) // the type is made and cached outside the count
			alloc, _ := lastSize(n)
			assert.Equal(t, alloc, leastBytesPerCall(keep, func() unsafe.Pointer { return newLast(heads, n) }),
				"%d bytes, %d heads", n, heads)
		}
	}
	runtime.KeepAlive(keep)
}

// leastBytesPerCall fills keep with newPiece's results and returns the bytes
// allocated per call, the least over a few trials: the runtime (or the race
// detector) may allocate something of its own during one of them.
func leastBytesPerCall(keep []unsafe.Pointer, newPiece func() unsafe.Pointer) int {
	least := math.MaxInt
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range keep {
			keep[i] = newPiece()
		}
		runtime.ReadMemStats(&after)
		least = min(least, int(after.TotalAlloc-before.TotalAlloc)/len(keep))
	}
	return least
}

// A plan's heads fill their classes exactly, its last piece is a small
// object, and each head saves minPieceSaving over the plan without it.
func TestPlanSaves(t *testing.T) {
	split := 0
	for n := 1; n < 3*maxSmallSize; n += 3 {
		p := plan(n, 0)
		if p.heads == 0 {
			continue
		}
		split++
		rest := n
		for _, h := range p.headLen[:p.heads] {
			require.Equal(t, h, allocSize(h), "%d bytes: head %d fills its class", n, h)
			require.Equal(t, h, pieceLen(pieceCode(h)))
			rest -= h
		}
		require.GreaterOrEqual(t, rest, 0)
		one := planCost(n, 0, layoutPlan{})
		require.LessOrEqual(t, planCost(n, 0, p), one-p.heads*minPieceSaving, "%d bytes: %+v", n, p)
		_, last := lastSize(p.heads*wordBytes + 3 + 2*p.heads + rest)
		require.LessOrEqual(t, last, maxSmallSize)
	}
	assert.NotZero(t, split)
	assert.Zero(t, plan(40, 0).heads, "small encodings stay whole")
	assert.Equal(t, 10240, plan(10300, 0).headLen[0], "a 10.3 KB pod: 10240 and a last piece, not 10880")
	assert.Equal(t, 5*pageSize, plan(5*pageSize+100, 0).headLen[0], "whole pages and a small piece")
}

// Realistic pods waste little of the heap their pieces take, prefix and
// head pointers included: 21.4 bytes a pod on average, against 53 for the
// two pieces and the 32-byte value that held them before.
func TestRealisticPodsWasteLittle(t *testing.T) {
	src := fixtures.NewPodSource(17)
	c, err := NewCodec(src.Pod(0), Options{})
	require.NoError(t, err)
	const pods = 500
	waste := 0
	for i := range pods {
		e, err := c.Encode(src.Pod(i))
		require.NoError(t, err)
		l := e.layout()
		waste += heapOf(&l) - l.length
	}
	assert.LessOrEqual(t, float64(waste)/pods, 22.0)
}

// heapOf is the heap an encoding laid out as l takes.
func heapOf(l *layout) int {
	if l.heads == 0 {
		return allocSize(l.prefix + l.length)
	}
	alloc, _ := lastSize(l.heads*wordBytes + l.prefix + l.lastLen())
	for _, h := range l.headLen[:l.heads] {
		alloc += h
	}
	return alloc
}

// Every layout round-trips its body, flags and tag, and an Encoding, one
// pointer, goes into an interface without allocating.
func TestEncodingLayouts(t *testing.T) {
	body := make([]byte, 3*maxSmallSize)
	for i := range body {
		body[i] = byte(i * 7)
	}
	seen := map[int]bool{}
	for _, n := range []int{0, 1, 40, 1000, 5500, 10300, 11700, 20000, maxSmallSize + 5000, 3 * maxSmallSize} {
		for _, tag := range []uint32{0, 1, 300} {
			e, err := newEncoding(flagTypeMeta, tag, body[:n])
			require.NoError(t, err)
			l := e.layout()
			seen[l.heads] = true
			assert.Equal(t, body[:n], e.Bytes(), "%d bytes, tag %d", n, tag)
			assert.Equal(t, n, e.Len())
			assert.Equal(t, tag, TagOf(e))
			assert.Equal(t, flagTypeMeta, l.flags&^flagTagged)
			assert.True(t, sameBytes(e.Identity(), e.Identity()), "one identity")
		}
	}
	assert.Equal(t, map[int]bool{0: true, 1: true, 2: true}, seen, "every head count")
	assert.Equal(t, uintptr(wordBytes), unsafe.Sizeof(Encoding{}))
	e, err := newEncoding(0, 0, body[:11700])
	require.NoError(t, err)
	var held any
	assert.Zero(t, testing.AllocsPerRun(10, func() { held = e }))
	assert.Equal(t, any(e), held)
}

// The head pieces live as long as the last piece points to them: after
// collections that reuse freed memory, the bytes are intact.
func TestHeadsSurviveCollections(t *testing.T) {
	body := make([]byte, 11700)
	for i := range body {
		body[i] = byte(i * 13)
	}
	var kept []Encoding
	for range 50 {
		e, err := newEncoding(0, 0, body)
		require.NoError(t, err)
		require.Equal(t, maxHeads, e.layout().heads)
		kept = append(kept, e)
	}
	for range 3 {
		runtime.GC()
		garbage := make([][]byte, 200)
		for i := range garbage {
			garbage[i] = bytes.Repeat([]byte{0xAA}, 10240)
		}
		runtime.KeepAlive(garbage)
	}
	for _, e := range kept {
		require.Equal(t, body, e.Bytes())
	}
}

// realisticPod is a pod as an informer holds it, whose encoding is stored
// in several pieces.
func realisticPod(t testing.TB) (*Codec, kruntime.Object, Encoding) {
	pod := fromWire(t, fixtures.Pods(17, 1)[0])
	c, err := NewCodec(pod, Options{})
	require.NoError(t, err)
	e, err := c.Encode(pod)
	require.NoError(t, err)
	require.NotZero(t, e.layout().heads, "the fixture pod is stored in several pieces")
	return c, pod, e
}

func TestEncodingPieces(t *testing.T) {
	c, pod, e := realisticPod(t)
	var want bytes.Buffer
	require.NoError(t, c.serializers[Protobuf].Encode(pod, &want))
	assert.Equal(t, want.Bytes(), e.Bytes(), "the raw serializer's bytes")
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
			l := e.layout()
			if l.heads == 0 {
				continue
			}
			split = true
			s := getScratch(e.Len())
			got, err := c.decodeWith(s, e, &l)
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
		pieces := float64(1 + e.layout().heads)
		assertAllocs(t, marshal+pieces, 2, func() { _, _ = c.Encode(obj) }, name+": Encode")

		body := e.Bytes()
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
