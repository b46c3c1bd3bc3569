package hashmap

import (
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"testing"
	"unsafe"
)

// TestSlotsHoldNoPadding pins the slot sizes the store's memory per object
// rests on: an item is its key and value, a set member its key alone (a
// zero-size value placed last would add a padding word), the hash bits
// sharing a word with the key's length.
func TestSlotsHoldNoPadding(t *testing.T) {
	if got := unsafe.Sizeof(slot[any]{}); got != 32 {
		t.Errorf("slot[any] is %d bytes, want 32", got)
	}
	if got := unsafe.Sizeof(slot[struct{}]{}); got != 16 {
		t.Errorf("slot[struct{}] is %d bytes, want 16", got)
	}
}

// TestGrownTablesStayHalfFull fills a map key by key and checks, at every
// size, that every table holds at least half its slots, and that the whole map spends at most two slots per key once it
// is large: growth and splits size tables for their content instead of
// doubling them.
func TestGrownTablesStayHalfFull(t *testing.T) {
	withHash(t, seededHash)
	var m Map[int]
	e := NewEpoch()
	for i := range 30000 {
		m.Set(e, "ns/pod-"+strconv.Itoa(i), i)
		if i%997 != 0 {
			continue
		}
		slots := 0
		for _, tb := range distinctTables(m) {
			slots += len(tb.slots)
			if 2*tb.used < len(tb.slots) {
				t.Fatalf("after %d keys: a table of %d slots holds %d", i+1, len(tb.slots), tb.used)
			}
		}
		if i > 10*maxSlots && slots > 2*m.Len() {
			t.Fatalf("after %d keys: %d slots", i+1, slots)
		}
	}
	checkInvariants(t, m)
}

// distinctTables returns m's tables, each once, in directory order.
func distinctTables[V any](m Map[V]) []*table[V] {
	var out []*table[V]
	m.eachTable(func(tb *table[V]) bool {
		out = append(out, tb)
		return true
	})
	return out
}

// TestSnapshotTablesUnchangedByGrowthAndSplits takes a snapshot, then
// writes in a new epoch until every table has grown or split, and checks
// that the snapshot's tables (slots and their distance bytes) are exactly as
// they were.
func TestSnapshotTablesUnchangedByGrowthAndSplits(t *testing.T) {
	var m Map[int]
	e := NewEpoch()
	for i := range 5000 {
		m.Set(e, "k"+strconv.Itoa(i), i)
	}
	snapshot := m
	type copied struct {
		slots []slot[int]
	}
	before := map[*table[int]]copied{}
	for _, tb := range distinctTables(snapshot) {
		before[tb] = copied{slices.Clone(tb.slots)}
	}
	e = NewEpoch()
	for i := range 5000 {
		m.Delete(e, "k"+strconv.Itoa(2*i))
		m.Set(e, "k"+strconv.Itoa(5000+i), -i)
	}
	for _, tb := range distinctTables(m) {
		if _, shared := before[tb]; shared {
			t.Fatal("a table of the snapshot was kept by the writer")
		}
	}
	for tb, c := range before {
		if !slices.Equal(tb.slots, c.slots) {
			t.Fatal("a write changed a table of the snapshot")
		}
	}
	checkInvariants(t, snapshot)
	checkInvariants(t, m)
}

// TestSplitRehashesEachHalf fills one table to the point of splitting and
// checks the halves: each holds exactly the keys of its hash bit, at the
// distances its own size gives them, half full.
func TestSplitRehashesEachHalf(t *testing.T) {
	withHash(t, seededHash)
	var m Map[int]
	e := NewEpoch()
	want := map[string]int{}
	for i := 0; m.dir == nil || m.dir.depth == 0; i++ {
		k := strconv.Itoa(i)
		m.Set(e, k, i)
		want[k] = i
	}
	if len(m.dir.tables) != 2 || m.dir.tables[0] == m.dir.tables[1] {
		t.Fatalf("first split left %d tables", len(distinctTables(m)))
	}
	for half, tb := range m.dir.tables {
		if tb.depth != 1 {
			t.Fatalf("half %d has depth %d", half, tb.depth)
		}
		if got := checkTable(t, tb, func(h uint32) bool { return int(h>>31) == half }); got != tb.used {
			t.Fatalf("half %d counts %d, holds %d", half, tb.used, got)
		}
		if len(tb.slots) != roomy(tb.used) && len(tb.slots) != roomy(tb.used-1) {
			t.Fatalf("half %d: %d slots for %d keys", half, len(tb.slots), tb.used)
		}
	}
	checkSame(t, m, want)
}

// TestSaturatedDistances forces one probe run far past what a distance byte
// counts, then deletes from its head so that every entry moves back across
// the saturation point, checking the recomputed distances each time.
func TestSaturatedDistances(t *testing.T) {
	withHash(t, func(string) uint64 { return 7 })
	var m Map[int]
	e := NewEpoch()
	want := map[string]int{}
	for i := range 3 * sat {
		m.Set(e, strconv.Itoa(i), i)
		want[strconv.Itoa(i)] = i
	}
	checkInvariants(t, m)
	snapshot, snapWant := m, maps.Clone(want)
	e = NewEpoch()
	for i := range 2 * sat {
		m.Delete(e, strconv.Itoa(i))
		delete(want, strconv.Itoa(i))
		if i%64 == 0 {
			checkInvariants(t, m)
		}
	}
	checkSame(t, m, want)
	checkSame(t, snapshot, snapWant)
}

// TestBoxedKeys runs the model with keys boxed from three bytes on, as
// keys of 4 GiB and more are, and checks that they were: most keys are
// boxed, the shortest are not.
func TestBoxedKeys(t *testing.T) {
	old := boxFrom
	boxFrom = 3
	t.Cleanup(func() { boxFrom = old })
	r := rand.New(rand.NewSource(4))
	for range 50 {
		runModel(t, randomOps(r, 300))
	}
	var m Map[int]
	e := NewEpoch()
	for _, k := range []string{"", "k1", "k12", "k123"} {
		m.Set(e, k, len(k))
	}
	for _, tb := range distinctTables(m) {
		for i := range tb.slots {
			if s := &tb.slots[i]; s.meta() != 0 && (s.info>>distBits == boxed) != (len(s.key()) >= 3) {
				t.Errorf("key %q: length field %d", s.key(), s.info>>distBits)
			}
		}
	}
	checkSame(t, m, map[string]int{"": 0, "k1": 2, "k12": 3, "k123": 4})
}
