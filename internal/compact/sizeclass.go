package compact

import (
	"math/bits"
	"reflect"
	"slices"
	"sync"
	"unsafe"
)

// sizeClasses are the sizes the Go allocator hands out for allocations of
// up to maxSmallSize bytes (internal/runtime/gc's table): a request takes
// the smallest class that holds it, so a 10.3 KB encoding occupies 10880
// bytes. TestSizeClassesAreTheRuntimes checks the table against the
// running runtime.
var sizeClasses = [...]uint16{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240,
	256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536,
	1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728,
	10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

const (
	// maxSmallSize is the largest size class; larger allocations take
	// whole pages.
	maxSmallSize = 32768
	pageSize     = 8192
	// maxInlineBits is the largest object with pointers whose pointer
	// bitmap the runtime keeps beside its span; a larger one carries a
	// word-sized header in its allocation.
	maxInlineBits = 512
	// minPieceSaving is the least heap another piece must save: below it,
	// the allocation and the join on decode are not worth their cost.
	minPieceSaving = 8
)

// Sizes up to smallStep*len(classBySmall) find their class in
// classBySmall, in steps of smallStep bytes; larger ones in classByLarge,
// in steps of largeStep: every class boundary is a multiple of its step,
// so a plan's many size look-ups cost a load each.
const (
	smallStep = 8
	largeStep = 128
	smallMax  = 1024
)

var classBySmall, classByLarge = classTables()

func classTables() (small [smallMax/smallStep + 1]uint8, large [(maxSmallSize-smallMax)/largeStep + 1]uint8) {
	for i := range small {
		c, _ := slices.BinarySearch(sizeClasses[:], uint16(i*smallStep))
		small[i] = uint8(c)
	}
	for i := range large {
		c, _ := slices.BinarySearch(sizeClasses[:], uint16(smallMax+i*largeStep))
		large[i] = uint8(c)
	}
	return small, large
}

// classOf is the index of the smallest size class that holds n bytes,
// 0 < n <= maxSmallSize.
func classOf(n int) int {
	if n <= smallMax {
		return int(classBySmall[(n+smallStep-1)/smallStep])
	}
	return int(classByLarge[(n-smallMax+largeStep-1)/largeStep])
}

// allocSize is the heap an allocation of n bytes without pointers
// occupies.
func allocSize(n int) int {
	switch {
	case n == 0:
		return 0
	case n > maxSmallSize:
		return (n + pageSize - 1) &^ (pageSize - 1)
	}
	return int(sizeClasses[classOf(n)])
}

// lastSize is the heap a last piece of n bytes, pointers ahead, occupies,
// and the size of the object that fills it.
func lastSize(n int) (alloc, object int) {
	if n <= maxInlineBits {
		alloc = allocSize(n)
		return alloc, alloc
	}
	alloc = allocSize(n + wordBytes)
	return alloc, alloc - wordBytes
}

// pieceCode names a head piece's length, a size class or whole pages, in
// a byte or two.
func pieceCode(n int) uint64 {
	if n <= maxSmallSize {
		return uint64(classOf(n))
	}
	return uint64(len(sizeClasses) + n/pageSize)
}

// pieceLen is the length pieceCode named.
func pieceLen(code uint64) int {
	if code < uint64(len(sizeClasses)) {
		return int(sizeClasses[code])
	}
	return int(code-uint64(len(sizeClasses))) * pageSize
}

// layoutPlan is how a body is split: its head pieces' lengths.
type layoutPlan struct {
	heads   int
	headLen [maxHeads]int
}

// planCost is the heap of the pieces of a body of n bytes split as p says,
// its prefix holding tagLen bytes of tag.
func planCost(n, tagLen int, p layoutPlan) int {
	heads, rest := 0, n
	prefix := tagLen
	for _, h := range p.headLen[:p.heads] {
		heads += h
		rest -= h
		prefix += uvarintLen(pieceCode(h))
	}
	prefix += uvarintLen(uint64(rest)<<(flagBits+headBits) | 1<<(flagBits+headBits) - 1)
	if p.heads == 0 {
		return allocSize(prefix + rest)
	}
	alloc, _ := lastSize(p.heads*wordBytes + prefix + rest)
	return heads + alloc
}

// uvarintLen is the length of v as a uvarint.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// plan splits a body of n bytes, whose prefix holds tagLen bytes of tag,
// into the pieces that occupy the least heap: one, or
// head pieces filling a size class (or whole pages) exactly and a last
// piece with the rest. A first head is tried at each class from half of n
// up (whole pages past maxSmallSize), so that the last piece stays small,
// and a second at the largest class below the rest. Each head must save
// minPieceSaving.
func plan(n, tagLen int) layoutPlan {
	var best layoutPlan
	score := planCost(n, tagLen, best)
	if score-n < wordBytes+minPieceSaving {
		// Less is wasted than a head's pointer and saving: none pays.
		return best
	}
	consider := func(p layoutPlan) {
		if s := planCost(n, tagLen, p) + p.heads*minPieceSaving; s < score {
			best, score = p, s
		}
	}
	withFirst := func(h1 int) {
		consider(layoutPlan{heads: 1, headLen: [maxHeads]int{h1}})
		if rest := n - h1; rest > int(sizeClasses[0]) {
			consider(layoutPlan{heads: 2, headLen: [maxHeads]int{h1, int(sizeClasses[classOf(rest)-1])}})
		}
	}
	if n > maxSmallSize {
		withFirst(n &^ (pageSize - 1))
		return best
	}
	for _, class := range sizeClasses[classOf(max(n/2, 1)):] {
		if int(class) >= n {
			break
		}
		withFirst(int(class))
	}
	return best
}

// lastTypes holds the Go type of each last piece made, by head count and
// object size: the runtime then knows which words are pointers.
var lastTypes sync.Map

// newLast allocates a last piece of n bytes of which the first heads words
// are pointers, filling its allocation, and returns it.
func newLast(heads, n int) unsafe.Pointer {
	_, size := lastSize(n)
	key := [2]int{heads, size}
	t, ok := lastTypes.Load(key)
	if !ok {
		t, _ = lastTypes.LoadOrStore(key, reflect.StructOf([]reflect.StructField{
			{Name: "Heads", Type: reflect.ArrayOf(heads, reflect.TypeFor[*byte]())},
			{Name: "Bytes", Type: reflect.ArrayOf(size-heads*wordBytes, reflect.TypeFor[byte]())},
		}))
	}
	return reflect.New(t.(reflect.Type)).UnsafePointer()
}
