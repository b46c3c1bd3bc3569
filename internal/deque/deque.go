// Package deque provides a growable ring buffer used as the backing store of
// the cache package's queues.
//
// A queue built on a plain slice (append at the tail, reslice at the head)
// keeps reallocating as its window slides through memory and never returns
// the space of a burst. A ring reuses its slots and shrinks once it is mostly
// empty, so a relist of many objects does not pin its peak size forever.
package deque

// minCap is the capacity of a new ring; it bounds how often a small queue
// reallocates.
const minCap = 8

// shrinkFloor is the capacity below which a ring never shrinks. A queue that
// fills and drains by the batch (a FIFO feeding a batch consumer) would
// otherwise free and regrow its ring on every batch; a thousand slots is
// little memory and covers one batch.
const shrinkFloor = 1024

// Deque is a FIFO ring buffer. The zero value is an empty deque ready to use.
// It is not safe for concurrent use.
type Deque[T any] struct {
	buf  []T
	head int
	n    int
}

// Len returns the number of elements.
func (d *Deque[T]) Len() int { return d.n }

// PushBack appends v at the tail.
func (d *Deque[T]) PushBack(v T) {
	if d.n == len(d.buf) {
		d.resize(max(minCap, 2*len(d.buf)))
	}
	d.buf[d.slot(d.n)] = v
	d.n++
}

// Grow makes room for n more elements, so that a known number of pushes
// allocates once and exactly.
func (d *Deque[T]) Grow(n int) {
	if need := d.n + n; need > len(d.buf) {
		d.resize(max(minCap, need))
	}
}

// slot maps a position counted from the head to an index in buf.
func (d *Deque[T]) slot(i int) int {
	j := d.head + i
	if j >= len(d.buf) {
		j -= len(d.buf)
	}
	return j
}

// Front returns the head element; ok is false when the deque is empty.
func (d *Deque[T]) Front() (v T, ok bool) {
	if d.n == 0 {
		return v, false
	}
	return d.buf[d.head], true
}

// PopFront removes and returns the head element; ok is false when the deque
// is empty. The vacated slot is zeroed so the ring holds no stale reference.
func (d *Deque[T]) PopFront() (v T, ok bool) {
	if d.n == 0 {
		return v, false
	}
	var zero T
	v = d.buf[d.head]
	d.buf[d.head] = zero
	d.head = d.slot(1)
	d.n--
	d.maybeShrink()
	return v, true
}

// PopFrontInto moves the len(dst) head elements into dst, in order. It
// panics if the deque holds fewer, like a slice index would. The moves are
// bulk copies, so a batch pays for its write barriers once, not per element.
func (d *Deque[T]) PopFrontInto(dst []T) {
	n := len(dst)
	if n > d.n {
		panic("deque: index out of range")
	}
	first := min(n, len(d.buf)-d.head)
	copy(dst, d.buf[d.head:d.head+first])
	clear(d.buf[d.head : d.head+first])
	if first < n {
		copy(dst[first:], d.buf[:n-first])
		clear(d.buf[:n-first])
	}
	d.head = d.slot(n)
	d.n -= n
	d.maybeShrink()
}

// At returns the i-th element from the head. It panics if i is out of range,
// like a slice index would.
func (d *Deque[T]) At(i int) T {
	if i < 0 || i >= d.n {
		panic("deque: index out of range")
	}
	return d.buf[d.slot(i)]
}

// Each calls fn for every element from head to tail until fn returns false.
func (d *Deque[T]) Each(fn func(T) bool) {
	for i := 0; i < d.n; i++ {
		if !fn(d.buf[d.slot(i)]) {
			return
		}
	}
}

// Reset empties the deque and releases its storage.
func (d *Deque[T]) Reset() {
	*d = Deque[T]{}
}

// maybeShrink halves the ring when it is at most a quarter full, so memory
// follows the queue length down after a burst, down to shrinkFloor.
func (d *Deque[T]) maybeShrink() {
	if len(d.buf) > shrinkFloor && d.n <= len(d.buf)/4 {
		d.resize(max(shrinkFloor, len(d.buf)/2))
	}
}

func (d *Deque[T]) resize(size int) {
	buf := make([]T, size)
	if d.n > 0 {
		if d.head+d.n <= len(d.buf) {
			copy(buf, d.buf[d.head:d.head+d.n])
		} else {
			k := copy(buf, d.buf[d.head:])
			copy(buf[k:], d.buf[:d.n-k])
		}
	}
	d.buf = buf
	d.head = 0
}
