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
		if rng.Intn(100) < pushBias {
			d.PushBack(next)
			model = append(model, next)
			next++
		} else {
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
	if c := len(d.buf); c > 64 {
		t.Fatalf("capacity %d after draining, want it shrunk", c)
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
