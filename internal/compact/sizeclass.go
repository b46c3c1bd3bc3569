package compact

import "slices"

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
	// minSplitSaving is the least heap a split into two pieces must save:
	// below it, the second allocation and the join on decode are not worth
	// their cost.
	minSplitSaving = 64
)

// allocSize is the heap an allocation of n bytes occupies.
func allocSize(n int) int {
	switch {
	case n == 0:
		return 0
	case n > maxSmallSize:
		return (n + pageSize - 1) &^ (pageSize - 1)
	}
	i, _ := slices.BinarySearch(sizeClasses[:], uint16(n))
	return int(sizeClasses[i])
}

// splitAt returns the length of the first of two pieces that n bytes are
// best stored in, or n when one piece is best. The first piece is a size
// class (or whole pages) filled exactly; of those, the one whose remainder
// wastes least is chosen, the larger on a tie. Only first pieces of at
// least half of n are tried: the remainder is then small, and so is the
// gap to its class.
func splitAt(n int) int {
	best, cost := n, allocSize(n)-minSplitSaving
	if n > maxSmallSize {
		if head := n &^ (pageSize - 1); head+allocSize(n-head) <= cost {
			return head
		}
		return n
	}
	from, _ := slices.BinarySearch(sizeClasses[:], uint16(n/2))
	for _, class := range sizeClasses[from:] {
		head := int(class)
		if head >= n {
			break
		}
		if c := head + allocSize(n-head); c <= cost {
			best, cost = head, c
		}
	}
	return best
}
