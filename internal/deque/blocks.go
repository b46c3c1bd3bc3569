package deque

// BlockSize is how many elements one block of a Blocks queue holds.
const BlockSize = 128

// maxSpareBlocks consumed blocks are kept for reuse: one of the informer's
// notification chunks (1024) fits in them, about 40 KB of notifications.
const maxSpareBlocks = 8

// Blocks is a FIFO in a chain of fixed-size blocks. Unlike Deque it never
// copies an element once pushed: a backlog that keeps growing (a handler
// that lags behind) grows a block at a time, and consumed blocks are freed
// as it drains. Up to maxSpareBlocks emptied blocks are kept, so a consumer
// that trails its producer by a batch or so allocates nothing. The zero
// value is an empty queue; it is not safe for concurrent use.
type Blocks[T any] struct {
	head, tail *block[T]
	// first is the index of the oldest element in head, next the free
	// index in tail.
	first, next int
	n           int
	// spare is a chain of emptied blocks, nspare long.
	spare  *block[T]
	nspare int
}

type block[T any] struct {
	items [BlockSize]T
	next  *block[T]
}

// Len returns the number of elements.
func (q *Blocks[T]) Len() int { return q.n }

// PushBack appends v at the tail.
func (q *Blocks[T]) PushBack(v T) {
	switch {
	case q.tail == nil:
		q.head = q.newBlock()
		q.tail = q.head
	case q.next == BlockSize:
		q.tail.next = q.newBlock()
		q.tail, q.next = q.tail.next, 0
	}
	q.tail.items[q.next] = v
	q.next++
	q.n++
}

func (q *Blocks[T]) newBlock() *block[T] {
	b := q.spare
	if b == nil {
		return &block[T]{}
	}
	q.spare, b.next = b.next, nil
	q.nspare--
	return b
}

// PopFront removes and returns the head element; ok is false when empty.
func (q *Blocks[T]) PopFront() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	var zero T
	v = q.head.items[q.first]
	q.head.items[q.first] = zero // drop references for the GC
	q.first++
	q.n--
	q.advance()
	return v, true
}

// advance rewinds an emptied queue to its head block, or moves past a
// consumed head block, keeping it as a spare if there is room.
func (q *Blocks[T]) advance() {
	switch {
	case q.n == 0:
		q.tail, q.first, q.next = q.head, 0, 0
	case q.first == BlockSize:
		done := q.head
		q.head, q.first = done.next, 0
		if q.nspare < maxSpareBlocks {
			done.next = q.spare
			q.spare = done
			q.nspare++
		}
	}
}

// PopFrontInto moves up to len(dst) elements into dst, a block's run at a
// time, and returns how many.
func (q *Blocks[T]) PopFrontInto(dst []T) int {
	n := 0
	for n < len(dst) && q.n > 0 {
		end := BlockSize
		if q.head == q.tail {
			end = q.next
		}
		run := q.head.items[q.first:min(end, q.first+len(dst)-n)]
		copy(dst[n:], run)
		clear(run)
		n += len(run)
		q.n -= len(run)
		q.first += len(run)
		q.advance()
	}
	return n
}

// Front returns a pointer to the head element, or nil when empty; it is
// valid until the next change to the queue.
func (q *Blocks[T]) Front() *T {
	if q.n == 0 {
		return nil
	}
	return &q.head.items[q.first]
}
