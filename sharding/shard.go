package sharding

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	apisharding "k8s.io/apimachinery/pkg/sharding"
)

// Fields a Shard can hash, as the API server's shard selector names them.
const (
	// ByUID spreads objects one by one: a uid never changes, so an object never moves
	// between shards. It is the default.
	ByUID = "object.metadata.uid"
	// ByNamespace keeps each namespace on one replica; every cluster-scoped object hashes
	// the empty namespace and so lands on the same replica.
	ByNamespace = "object.metadata.namespace"
)

// hashSpaceEnd is the exclusive upper bound of the 64-bit hash space, 2^64, in the only
// 17-digit form the API server accepts.
const hashSpaceEnd = "0x10000000000000000"

// Shard names the slice of a collection one replica owns. Either Index and Count split the
// 2^64 hash space into Count equal ranges and pick range Index, or Ranges lists the hash
// ranges explicitly (Index and Count are then left zero). Field is the hashed field,
// ByUID when empty.
type Shard struct {
	// Index is this replica's position, 0 <= Index < Count.
	Index int
	// Count is the number of replicas sharing the collection.
	Count int
	// Field is ByUID (the default when empty) or ByNamespace.
	Field string
	// Ranges, when set, replaces Index and Count with explicit hash ranges.
	Ranges []Range
}

// Range is a half-open range [Start, End) of 64-bit FNV-1a hashes written as the API
// server takes them: "0x" and 16 lower-case hex digits, or "0x10000000000000000" (2^64) for
// an End that closes the hash space.
type Range struct {
	// Start is the first hash in the range.
	Start string
	// End is the first hash after the range.
	End string
}

// EvenRange returns range index of count equal, adjacent ranges covering the whole hash
// space: range i starts at floor(i*2^64/count), so consecutive ranges share their boundary
// and the last one ends at 2^64.
func EvenRange(index, count int) (Range, error) {
	if count < 1 || index < 0 || index >= count {
		return Range{}, fmt.Errorf("shard index %d out of range for a shard count of %d", index, count)
	}
	return Range{Start: hashBoundary(index, count), End: hashBoundary(index+1, count)}, nil
}

// hashBoundary is floor(i*2^64/n) as the API server writes it; 0 <= i <= n.
func hashBoundary(i, n int) string {
	if i == n {
		return hashSpaceEnd
	}
	q, _ := bits.Div64(uint64(i), 0, uint64(n))
	return fmt.Sprintf("0x%016x", q)
}

// Selector returns the shard as apimachinery's shard selector, the form the root package's
// NewShardedListWatch and SharedIndexInformerOptions.ShardSelector take (its String is the
// expression for ListOptions.ShardSelector), or an error naming what is wrong with the shard.
func (s Shard) Selector() (apisharding.Selector, error) {
	reqs, err := s.requirements()
	if err != nil {
		return nil, err
	}
	return apisharding.NewSelector(reqs...), nil
}

// requirements validates the shard with the API server's rules and returns its ranges.
func (s Shard) requirements() ([]apisharding.ShardRangeRequirement, error) {
	field := s.Field
	if field == "" {
		field = ByUID
	}
	if field != ByUID && field != ByNamespace {
		return nil, fmt.Errorf("unsupported shard field %q; supported: %s, %s", s.Field, ByUID, ByNamespace)
	}
	ranges, err := s.ranges()
	if err != nil {
		return nil, err
	}
	reqs := make([]apisharding.ShardRangeRequirement, len(ranges))
	for i, r := range ranges {
		if err := r.validate(); err != nil {
			return nil, err
		}
		reqs[i] = apisharding.ShardRangeRequirement{Key: field, Start: r.Start, End: r.End}
	}
	return reqs, nil
}

func (s Shard) ranges() ([]Range, error) {
	if len(s.Ranges) == 0 {
		r, err := EvenRange(s.Index, s.Count)
		return []Range{r}, err
	}
	if s.Index != 0 || s.Count != 0 {
		return nil, errors.New("a shard has either explicit ranges or an index and count, not both")
	}
	return s.Ranges, nil
}

func (r Range) validate() error {
	if err := validHashBound(r.Start, false); err != nil {
		return fmt.Errorf("shard range start: %w", err)
	}
	if err := validHashBound(r.End, true); err != nil {
		return fmt.Errorf("shard range end: %w", err)
	}
	if !apisharding.HexLess(r.Start, r.End) {
		return fmt.Errorf("shard range start %s must be less than end %s", r.Start, r.End)
	}
	return nil
}

// validHashBound accepts what the API server's parser accepts: 0x and exactly 16 lower-case
// hex digits, or 2^64 where an end is expected.
func validHashBound(v string, end bool) error {
	if end && v == hashSpaceEnd {
		return nil
	}
	digits, ok := strings.CutPrefix(v, "0x")
	if !ok || len(digits) != 16 || strings.Trim(digits, "0123456789abcdef") != "" {
		return fmt.Errorf("%q is not a 0x-prefixed 16-digit lower-case hex value", v)
	}
	return nil
}

// covers reports whether every hash of inner lies in one of s's ranges or in adjacent ones,
// both shards hashing the same field.
func (s Shard) covers(inner Shard) bool {
	if cmp.Or(s.Field, ByUID) != cmp.Or(inner.Field, ByUID) {
		return false
	}
	outer, err := s.ranges()
	if err != nil {
		return false
	}
	want, err := inner.ranges()
	if err != nil {
		return false
	}
	outer = slices.SortedFunc(slices.Values(outer), func(a, b Range) int { return hexCompare(a.Start, b.Start) })
	for _, r := range want {
		if !rangesCover(outer, r) {
			return false
		}
	}
	return true
}

// rangesCover reports whether ranges, sorted by start, cover r without a gap.
func rangesCover(ranges []Range, r Range) bool {
	reached := r.Start // every hash before reached is covered
	for _, o := range ranges {
		if apisharding.HexLess(reached, o.Start) {
			break
		}
		if apisharding.HexLess(reached, o.End) {
			reached = o.End
		}
		if !apisharding.HexLess(reached, r.End) {
			return true
		}
	}
	return false
}

func hexCompare(a, b string) int {
	switch {
	case apisharding.HexLess(a, b):
		return -1
	case apisharding.HexLess(b, a):
		return 1
	}
	return 0
}
