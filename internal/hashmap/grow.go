package hashmap

const (
	// minSlots is the size of a new map's only table: small sets, which
	// indexes hold by the thousand, stay small.
	minSlots = 2
	// maxSlots is the size past which a full table splits instead of
	// growing. It bounds what the first write after a snapshot copies.
	maxSlots = 256
	// maxDepth bounds the directory (1<<maxDepth entries, 8 MB). Seeded
	// hashes reach it only past a hundred million keys; past it tables
	// grow instead of splitting, so a skewed hash function costs speed,
	// not unbounded memory.
	maxDepth = 20
)

// full reports whether a table of n slots holding used entries has no room
// for another. Robin Hood probing keeps runs short up to seven eighths
// full, and an empty slot always remains to end a probe.
func full(used, n int) bool { return 8*(used+1) > 7*n }

// roomy is the size of a table that a growth or split leaves n entries in:
// half full. Table sizes need not be powers of two, so a large table
// swings between half and seven eighths full, where a power-of-two table
// (as a Go map's) drops to seven sixteenths at each split. Half full keeps
// the moves per insert near a Go map's (each entry is moved 2.3 times on
// average against its 2, from its slot's stored hash, without reading its
// key) and the garbage too; fuller tables would save memory but move more.
func roomy(n int) int { return slotsAtLoad(n, 1, 2) }

// slotsAtLoad is the smallest table size, at least minSlots, that n
// entries fill to at most num/den.
func slotsAtLoad(n, num, den int) int {
	return max(minSlots, (n*den+num-1)/num)
}

// Sized returns an empty map, owned by e, laid out for about n keys, so that
// filling it neither grows tables one step at a time nor splits them: the
// garbage and rehashing of growth are skipped when the size is known, as it
// is for a store's Replace.
func Sized[V any](e Epoch, n int) Map[V] {
	var depth uint8
	for n>>depth > maxSlots*5/8 && depth < maxDepth {
		depth++
	}
	d := &directory[V]{epoch: e, depth: depth, tables: make([]*table[V], 1<<depth)}
	// Three quarters full on average: the few tables that draw more keys
	// than that grow on their own.
	per := (n + len(d.tables) - 1) >> depth
	slots := slotsAtLoad(per, 3, 4)
	for i := range d.tables {
		d.tables[i] = newTable[V](e, depth, slots)
	}
	return Map[V]{dir: d}
}

// makeRoom replaces the full table at directory index i by a larger one or,
// once that would pass maxSlots, by two halves split on the next hash bit.
// A split that would leave one half empty (keys whose hashes agree on that
// bit, as only forced collisions do) doubles the table instead.
func (m *Map[V]) makeRoom(e Epoch, i int) {
	d := m.ownedDir(e)
	t := d.tables[i]
	size := roomy(t.used + 1)
	if size <= maxSlots || t.depth == maxDepth {
		d.setSpan(i, t.rehashed(e, size))
		return
	}
	bit := uint32(1) << (31 - t.depth)
	high := 0
	for j := range t.slots {
		if t.slots[j].meta() != 0 && t.slots[j].hash&bit != 0 {
			high++
		}
	}
	if high == 0 || high == t.used {
		d.setSpan(i, t.rehashed(e, 2*len(t.slots)))
		return
	}
	if t.depth == d.depth {
		d.double()
		i *= 2
	}
	lo, n := d.span(i)
	low := newTable[V](e, t.depth+1, roomy(t.used-high))
	hi := newTable[V](e, t.depth+1, roomy(high))
	start := t.walkStart()
	for j := t.next(start); j != start; j = t.next(j) {
		switch s := t.slots[j]; {
		case s.meta() == 0:
		case s.hash&bit != 0:
			hi.insert(s)
		default:
			low.insert(s)
		}
	}
	for j := lo; j < lo+n/2; j++ {
		d.tables[j] = low
	}
	for j := lo + n/2; j < lo+n; j++ {
		d.tables[j] = hi
	}
}

// rehashed returns a table of n slots, owned by e, with t's entries, placed
// by their stored hashes.
func (t *table[V]) rehashed(e Epoch, n int) *table[V] {
	out := newTable[V](e, t.depth, n)
	start := t.walkStart()
	for i := t.next(start); i != start; i = t.next(i) {
		if t.slots[i].meta() != 0 {
			out.insert(t.slots[i])
		}
	}
	return out
}

// double splits every directory entry in two, both pointing where it did.
func (d *directory[V]) double() {
	tables := make([]*table[V], 2*len(d.tables))
	for j, t := range d.tables {
		tables[2*j], tables[2*j+1] = t, t
	}
	d.tables = tables
	d.depth++
}
