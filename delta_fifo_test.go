package cache

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// dfifoPop pops one key and describes its deltas, e.g. "ns/a: Added Updated".
func dfifoPop(t *testing.T, f *DeltaFIFO) (string, bool) {
	t.Helper()
	var desc string
	var initial bool
	item, err := f.Pop(func(obj interface{}, in bool) error {
		initial = in
		ds := obj.(Deltas)
		key, err := f.KeyOf(ds)
		require.NoError(t, err)
		types := make([]string, len(ds))
		for i, d := range ds {
			types[i] = string(d.Type)
			if _, ok := d.Object.(DeletedFinalStateUnknown); ok {
				types[i] += "(tombstone)"
			}
		}
		desc = key + ": " + strings.Join(types, " ")
		return nil
	})
	require.NoError(t, err)
	require.IsType(t, Deltas{}, item)
	return desc, initial
}

func dfifoDrain(t *testing.T, f *DeltaFIFO) []string {
	t.Helper()
	var out []string
	for dfifoLen(f) > 0 {
		d, _ := dfifoPop(t, f)
		out = append(out, d)
	}
	return out
}

func dfifoLen(f *DeltaFIFO) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queue.Len()
}

func TestD1_DeltaFIFOOptionsAndDefaults(t *testing.T) {
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	key, err := f.KeyOf(newTestPod("ns", "a", "1"))
	require.NoError(t, err)
	assert.Equal(t, "ns/a", key, "default key function is MetaNamespaceKeyFunc")
	assert.Nil(t, f.Transformer())
	old := NewDeltaFIFO(MetaNamespaceKeyFunc, nil)
	require.NoError(t, old.Replace([]interface{}{newTestPod("ns", "a", "1")}, ""))
	assert.Equal(t, []string{"ns/a: Sync"}, dfifoDrain(t, old), "NewDeltaFIFO does not emit Replaced")
}

func TestD2_KeyOf(t *testing.T) {
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	key, err := f.KeyOf(Deltas{{Type: Added, Object: newTestPod("ns", "old", "1")}, {Type: Updated, Object: newTestPod("ns", "new", "1")}})
	require.NoError(t, err)
	assert.Equal(t, "ns/new", key)
	key, err = f.KeyOf(DeletedFinalStateUnknown{Key: "any/key/at/all"})
	require.NoError(t, err)
	assert.Equal(t, "any/key/at/all", key)
	_, err = f.KeyOf(Deltas{})
	require.ErrorIs(t, err, ErrZeroLengthDeltasObject)
	assert.Equal(t, "0 length Deltas object; can't get key", errors.Unwrap(err).Error())
	_, err = f.KeyOf(Delta{Type: Added, Object: newTestPod("ns", "a", "1")})
	assert.Error(t, err, "a bare Delta is not unwrapped by DeltaFIFO")
}

func TestD3_OneDeltasPerKeyInFirstEnqueueOrder(t *testing.T) {
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	require.NoError(t, f.Add(newTestPod("ns", "b", "1")))
	require.NoError(t, f.Update(newTestPod("ns", "a", "2")))
	require.NoError(t, f.Delete(newTestPod("ns", "b", "2")))
	require.NoError(t, f.Add(newTestPod("ns", "c", "1")))
	d, _ := dfifoPop(t, f)
	assert.Equal(t, "ns/a: Added Updated", d)
	require.NoError(t, f.Add(newTestPod("ns", "a", "3")))
	assert.Equal(t, []string{"ns/b: Added Deleted", "ns/c: Added", "ns/a: Added"}, dfifoDrain(t, f), "no line jumping")
}

func TestD4_OnlyTrailingDeletionsAreDeduplicated(t *testing.T) {
	known := newRFIFOKnown(newTestPod("ns", "a", "1"))
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: known})
	observed := newTestPod("ns", "a", "2")
	require.NoError(t, f.Delete(DeletedFinalStateUnknown{Key: "ns/a"}))
	require.NoError(t, f.Delete(observed))
	require.NoError(t, f.Delete(newTestPod("ns", "a", "3")))
	_, err := f.Pop(func(obj interface{}, _ bool) error {
		ds := obj.(Deltas)
		require.Len(t, ds, 1)
		assert.Same(t, observed, ds[0].Object, "tombstone replaced by the observed deletion, which is then kept")
		return nil
	})
	require.NoError(t, err)

	require.NoError(t, f.Add(newTestPod("ns", "a", "4")))
	require.NoError(t, f.Delete(newTestPod("ns", "a", "4")))
	require.NoError(t, f.Add(newTestPod("ns", "a", "5")))
	require.NoError(t, f.Delete(newTestPod("ns", "a", "5")))
	assert.Equal(t, []string{"ns/a: Added Deleted Added Deleted"}, dfifoDrain(t, f))
}

func TestD5_TransformerOnEveryIncomingObjectExceptTombstonesAndSync(t *testing.T) {
	var seen []string
	known := newRFIFOKnown(newTestPod("ns", "k", "1"))
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: known, Transformer: func(o interface{}) (interface{}, error) {
		seen = append(seen, o.(interface{ GetName() string }).GetName())
		return o, nil
	}})
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	require.NoError(t, f.Update(newTestPod("ns", "a", "2")))
	require.NoError(t, f.Delete(newTestPod("ns", "a", "3")))
	require.NoError(t, f.Delete(DeletedFinalStateUnknown{Key: "ns/a", Obj: newTestPod("ns", "a", "4")}))
	require.NoError(t, f.Resync())
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "r", "1")}, ""))
	assert.Equal(t, []string{"a", "a", "a", "r"}, seen)
	assert.NotNil(t, f.Transformer())

	reported := captureReportedErrors(t)
	boom := errors.New("boom")
	g := NewDeltaFIFOWithOptions(DeltaFIFOOptions{Transformer: func(o interface{}) (interface{}, error) {
		if o.(interface{ GetName() string }).GetName() == "bad" {
			return nil, boom
		}
		return o, nil
	}})
	require.NoError(t, g.Replace([]interface{}{newTestPod("ns", "bad", "1")}, ""))
	assert.Equal(t, 0, dfifoLen(g))
	assert.Equal(t, []string{"Object from a relist left out: couldn't enqueue object: boom [key ns/bad]"}, reported.take())
	assert.True(t, g.HasSynced(), "a Replace that left out its only object has nothing to deliver")
	assert.Same(t, boom, g.Add(newTestPod("ns", "bad", "1")))
}

func TestD6_DeleteOfUnknownObjectIsIgnored(t *testing.T) {
	noKnown := NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	require.NoError(t, noKnown.Delete(newTestPod("ns", "a", "1")))
	assert.Equal(t, 0, dfifoLen(noKnown))
	assert.True(t, noKnown.HasSynced(), "Delete populates even when ignored")
	var ke KeyError
	require.ErrorAs(t, noKnown.Delete(7), &ke)

	known := newRFIFOKnown(newTestPod("ns", "known", "1"))
	known.failKey = "ns/broken"
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: known})
	require.NoError(t, f.Delete(newTestPod("ns", "unknown", "1")))
	require.NoError(t, f.Delete(newTestPod("ns", "known", "1")))
	require.NoError(t, f.Delete(newTestPod("ns", "broken", "1")))
	assert.Equal(t, []string{"ns/known: Deleted", "ns/broken: Deleted"}, dfifoDrain(t, f))
}

func TestD7_ReplaceEmitsReplacedThenTombstones(t *testing.T) {
	known := newRFIFOKnown(newTestPod("ns", "k", "1"), newTestPod("ns", "listed", "1"), newTestPod("ns", "q", "1"), newTestPod("ns", "t", "1"))
	known.keys = append(known.keys, "ns/missing", "ns/broken")
	known.failKey = "ns/broken"
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: known, EmitDeltaTypeReplaced: true})
	q := newTestPod("ns", "q", "2")
	require.NoError(t, f.Update(q))
	require.NoError(t, f.Delete(DeletedFinalStateUnknown{Key: "ns/t", Obj: newTestPod("ns", "t", "1")}))
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "listed", "2"), newTestPod("ns", "new", "1")}, "ignored"))

	var got []Deltas
	for dfifoLen(f) > 0 {
		_, err := f.Pop(func(obj interface{}, _ bool) error { got = append(got, obj.(Deltas)); return nil })
		require.NoError(t, err)
	}
	require.Len(t, got, 7)
	assert.Equal(t, Deltas{{Type: Updated, Object: q}, {Type: Deleted, Object: DeletedFinalStateUnknown{Key: "ns/q", Obj: q}}}, got[0])
	require.Len(t, got[1], 1, "a second tombstone of a tombstoned key is deduplicated")
	assert.Equal(t, Replaced, got[2][0].Type)
	assert.Equal(t, Replaced, got[3][0].Type)
	assert.Equal(t, Deltas{{Type: Deleted, Object: DeletedFinalStateUnknown{Key: "ns/k", Obj: known.objs["ns/k"]}}}, got[4])
	assert.Equal(t, Deltas{{Type: Deleted, Object: DeletedFinalStateUnknown{Key: "ns/missing"}}}, got[5])
	assert.Equal(t, Deltas{{Type: Deleted, Object: DeletedFinalStateUnknown{Key: "ns/broken"}}}, got[6])
}

func TestD7_TombstoneOfQueuedTombstoneUnwrapsObject(t *testing.T) {
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	inner := newTestPod("ns", "a", "1")
	require.NoError(t, f.Add(inner))
	require.NoError(t, f.Delete(DeletedFinalStateUnknown{Key: "ns/a", Obj: inner}))
	require.NoError(t, f.Replace(nil, ""))
	_, err := f.Pop(func(obj interface{}, _ bool) error {
		ds := obj.(Deltas)
		require.Len(t, ds, 2, "tombstone after tombstone collapses to the newer")
		assert.Equal(t, DeletedFinalStateUnknown{Key: "ns/a", Obj: inner}, ds[1].Object)
		return nil
	})
	require.NoError(t, err)
}

func TestD7_FirstReplaceCountsListedKeysAndDeletions(t *testing.T) {
	known := newRFIFOKnown(newTestPod("ns", "gone", "1"))
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: known})
	a := newTestPod("ns", "a", "1")
	require.NoError(t, f.Replace([]interface{}{a, a, newTestPod("ns", "b", "1")}, ""))
	var initial []bool
	for i := 0; i < 3; i++ {
		assert.False(t, f.HasSynced())
		_, in := dfifoPop(t, f)
		initial = append(initial, in)
	}
	assert.Equal(t, []bool{true, true, true}, initial)
	assert.True(t, f.HasSynced())

	empty := NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	require.NoError(t, empty.Replace(nil, ""))
	assert.True(t, empty.HasSynced(), "an empty first Replace syncs at once")
}

func TestD7_ReplaceLeavesOutKeyErrors(t *testing.T) {
	reported := captureReportedErrors(t)
	known := newRFIFOKnown(newTestPod("ns", "gone", "1"))
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: known, EmitDeltaTypeReplaced: true})
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "a", "1"), "bad", newTestPod("ns", "b", "1")}, ""))
	assert.Equal(t, []string{"ns/a: Replaced", "ns/b: Replaced", "ns/gone: Deleted(tombstone)"}, dfifoDrain(t, f), "every other object is replaced")
	if msgs := reported.take(); assert.Len(t, msgs, 1) {
		assert.Equal(t, "Object from a relist left out: object has no meta: object does not implement the Object interfaces [key  type string]", msgs[0], "no object contents")
	}
	assert.True(t, f.HasSynced(), "the initial list counts the queued keys only")
}

func TestD8_ResyncSkipsKeysWithQueuedDeltas(t *testing.T) {
	known := newRFIFOKnown(newTestPod("ns", "a", "1"), newTestPod("ns", "b", "1"))
	known.keys = append(known.keys, "ns/missing", "ns/broken")
	known.failKey = "ns/broken"
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: known})
	require.NoError(t, f.Update(newTestPod("ns", "b", "2")))
	require.NoError(t, f.Resync())
	assert.Equal(t, []string{"ns/b: Updated", "ns/a: Sync"}, dfifoDrain(t, f))
	assert.True(t, f.HasSynced())

	noKnown := NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	require.NoError(t, noKnown.Resync())
	assert.Equal(t, 0, dfifoLen(noKnown))
	assert.False(t, noKnown.HasSynced(), "Resync does not populate")
}

func TestD9_PopCountsDownBeforeProcessUnderLock(t *testing.T) {
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "a", "1")}, ""))
	_, err := f.Pop(func(_ interface{}, initial bool) error {
		assert.True(t, initial)
		assert.True(t, IsDoneForQueueTest(f), "Done closes before process runs")
		assert.False(t, f.mu.TryLock(), "process runs under the queue lock")
		return nil
	})
	require.NoError(t, err)
}

func TestQ4_DeltaFIFOAndFIFOCloseWakesWaiters(t *testing.T) {
	defer goleak.VerifyNone(t)
	for name, q := range map[string]Queue{"DeltaFIFO": NewDeltaFIFOWithOptions(DeltaFIFOOptions{}), "FIFO": NewFIFO(MetaNamespaceKeyFunc)} {
		t.Run(name, func(t *testing.T) {
			errs := make(chan error)
			go func() {
				_, err := q.Pop(func(interface{}, bool) error { return nil })
				errs <- err
			}()
			q.Close()
			assert.Same(t, ErrFIFOClosed, <-errs)
			require.NoError(t, q.Add(newTestPod("ns", "a", "1")))
			var popped interface{}
			_, err := q.Pop(func(obj interface{}, _ bool) error { popped = obj; return nil })
			require.NoError(t, err)
			assert.NotNil(t, popped, "queued items drain after Close")
			assert.True(t, q.(interface{ IsClosed() bool }).IsClosed())
		})
	}
}

func TestQ5_DeltaFIFOConcurrentProducersAndConsumer(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	const producers, perProducer = 4, 200
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perProducer; i++ {
				assert.NoError(t, f.Add(newTestPod(fmt.Sprint("p", p), fmt.Sprint(i), "1")))
			}
		}()
	}
	seen := map[string]bool{}
	for len(seen) < producers*perProducer {
		_, err := f.Pop(func(obj interface{}, _ bool) error {
			key, _ := f.KeyOf(obj)
			seen[key] = true
			return nil
		})
		require.NoError(t, err)
	}
	wg.Wait()
}

func TestD3_DrainedLargeQueueReleasesItsMap(t *testing.T) {
	f := NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	require.NoError(t, f.Replace(newTestPods(3000, 3, "1"), ""))
	assert.Equal(t, 3000, f.itemsPeak)
	dfifoDrain(t, f)
	assert.Equal(t, 0, f.itemsPeak, "the peak-sized map was replaced")
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	assert.Equal(t, []string{"ns/a: Added"}, dfifoDrain(t, f))
}
