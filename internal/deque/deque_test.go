package deque

import (
	"math/rand"
	"testing"
)

func TestDequeMatchesSliceModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var d Deque[int]
	var model []int
	next := 0
	for step := 0; step < 200000; step++ {
		// Bursty pushes and pops exercise growth, wrap-around and shrinking.
		pushBias := 50
		if (step/5000)%2 == 1 {
			pushBias = 30
		}
		switch r := rng.Intn(100); {
		case r < pushBias:
			d.PushBack(next)
			model = append(model, next)
			next++
		case r < pushBias+5:
			dst := make([]int, rng.Intn(len(model)+1))
			d.PopFrontInto(dst)
			for i, v := range dst {
				if v != model[i] {
					t.Fatalf("step %d: PopFrontInto[%d] = %d, want %d", step, i, v, model[i])
				}
			}
			model = model[len(dst):]
		default:
			v, ok := d.PopFront()
			if ok != (len(model) > 0) {
				t.Fatalf("step %d: PopFront ok=%v with model len %d", step, ok, len(model))
			}
			if ok {
				if v != model[0] {
					t.Fatalf("step %d: popped %d, want %d", step, v, model[0])
				}
				model = model[1:]
			}
		}
		if d.Len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, d.Len(), len(model))
		}
		if len(model) > 0 {
			if f, _ := d.Front(); f != model[0] {
				t.Fatalf("front %d, want %d", f, model[0])
			}
			if i := rng.Intn(len(model)); d.At(i) != model[i] {
				t.Fatalf("At(%d) = %d, want %d", i, d.At(i), model[i])
			}
		}
	}
}

func TestDequeShrinksAfterBurst(t *testing.T) {
	var d Deque[int]
	for i := 0; i < 100000; i++ {
		d.PushBack(i)
	}
	for i := 0; i < 99990; i++ {
		d.PopFront()
	}
	if c := len(d.buf); c != shrinkFloor {
		t.Fatalf("capacity %d after draining, want it shrunk to %d", c, shrinkFloor)
	}
	var got []int
	d.Each(func(v int) bool { got = append(got, v); return true })
	if len(got) != 10 || got[0] != 99990 || got[9] != 99999 {
		t.Fatalf("Each = %v", got)
	}
}

func TestDequePopZeroesSlot(t *testing.T) {
	var d Deque[*int]
	x := 1
	d.PushBack(&x)
	d.PopFront()
	if d.buf[0] != nil {
		t.Fatal("popped slot still references the element")
	}
	if _, ok := d.Front(); ok {
		t.Fatal("Front on empty deque reported ok")
	}
	d.Reset()
	if d.Len() != 0 {
		t.Fatal("Reset left elements")
	}
}

func TestDequeGrowReservesExactly(t *testing.T) {
	var d Deque[int]
	d.PushBack(1)
	d.PopFront()
	d.PushBack(2) // head is now off zero, so Grow must unwrap
	d.Grow(1000)
	if c := len(d.buf); c != 1001 {
		t.Fatalf("capacity %d after Grow(1000) with 1 element, want 1001", c)
	}
	for i := 0; i < 1000; i++ {
		d.PushBack(i + 3)
	}
	if c := len(d.buf); c != 1001 {
		t.Fatalf("pushes within the reservation reallocated to %d", c)
	}
	if v, _ := d.PopFront(); v != 2 {
		t.Fatalf("front %d, want 2", v)
	}
}

func TestDequeBatchCyclesDoNotReallocate(t *testing.T) {
	var d Deque[int]
	batch := make([]int, 1000)
	cycle := func() {
		for i := range batch {
			d.PushBack(i)
		}
		d.PopFrontInto(batch)
	}
	cycle()
	if n := testing.AllocsPerRun(100, cycle); n != 0 {
		t.Fatalf("a fill-and-drain cycle of one batch allocated %v times", n)
	}
}

func TestDequePopFrontIntoZeroesSlotsAndChecksLength(t *testing.T) {
	var d Deque[*int]
	x := 1
	d.PushBack(&x)
	d.PushBack(&x)
	dst := make([]*int, 2)
	d.PopFrontInto(dst)
	if d.buf[0] != nil || d.buf[1] != nil || dst[0] != &x || dst[1] != &x {
		t.Fatal("PopFrontInto left references behind or lost elements")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("PopFrontInto past the length did not panic")
		}
	}()
	d.PopFrontInto(make([]*int, 1))
}
