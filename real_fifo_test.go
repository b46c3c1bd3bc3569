package cache

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/klog/v2"
)

// rfifoKnown is a KeyListerGetter with a deterministic key order and an
// optional lookup failure, standing in for an informer's store.
type rfifoKnown struct {
	keys    []string
	objs    map[string]interface{}
	failKey string
}

func newRFIFOKnown(objs ...interface{}) *rfifoKnown {
	k := &rfifoKnown{objs: map[string]interface{}{}}
	for _, o := range objs {
		key, _ := MetaNamespaceKeyFunc(o)
		k.keys = append(k.keys, key)
		k.objs[key] = o
	}
	return k
}

func (k *rfifoKnown) ListKeys() []string { return append([]string(nil), k.keys...) }

func (k *rfifoKnown) GetByKey(key string) (interface{}, bool, error) {
	if key == k.failKey {
		return nil, false, errors.New("lookup failed")
	}
	o, ok := k.objs[key]
	return o, ok, nil
}

// rfifoDescribe names a delta by type and key; whole-queue deltas use their
// info (resource version, object count).
func rfifoDescribe(d Delta) string {
	switch o := d.Object.(type) {
	case ReplacedAllInfo:
		return fmt.Sprintf("%s rv=%s n=%d", d.Type, o.ResourceVersion, len(o.Objects))
	case BookmarkInfo:
		return fmt.Sprintf("%s rv=%s", d.Type, o.ResourceVersion)
	case SyncAllInfo:
		return string(d.Type)
	case DeletedFinalStateUnknown:
		return fmt.Sprintf("%s tombstone(%s)", d.Type, o.Key)
	}
	key, err := MetaNamespaceKeyFunc(d.Object)
	if err != nil {
		key = "<" + err.Error() + ">"
	}
	return fmt.Sprintf("%s %s", d.Type, key)
}

// rfifoDrain pops everything queued without blocking and describes it.
func rfifoDrain(t *testing.T, f *RealFIFO) []string {
	t.Helper()
	var out []string
	for rfifoLen(f) > 0 {
		_, err := f.Pop(func(obj interface{}, _ bool) error {
			for _, d := range obj.(Deltas) {
				out = append(out, rfifoDescribe(d))
			}
			return nil
		})
		require.NoError(t, err)
	}
	return out
}

func rfifoLen(f *RealFIFO) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.items.Len()
}

func rfifoAtomic() *RealFIFO {
	return NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, EmitDeltaTypeBookmark: true})
}

func TestQ1_QueuesSatisfyTheirInterfaces(t *testing.T) {
	var _ QueueWithBatch = rfifoAtomic()
	var _ Queue = NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	var _ Queue = NewFIFO(MetaNamespaceKeyFunc)
	var _ ReflectorBookmarkStore = rfifoAtomic()
	var _ TransformingStore = NewDeltaFIFOWithOptions(DeltaFIFOOptions{})
	_, deltaIsStore := interface{}(NewDeltaFIFOWithOptions(DeltaFIFOOptions{})).(Store)
	_, fifoIsStore := interface{}(NewFIFO(MetaNamespaceKeyFunc)).(Store)
	assert.False(t, deltaIsStore, "Q3: DeltaFIFO must not be a Store")
	assert.False(t, fifoIsStore, "Q3: FIFO must not be a Store")
}

func TestR1_RealFIFOKeepsEveryDeltaInArrivalOrder(t *testing.T) {
	f := rfifoAtomic()
	a1, b1, a2 := newTestPod("ns", "a", "1"), newTestPod("ns", "b", "1"), newTestPod("ns", "a", "2")
	require.NoError(t, f.Add(a1))
	require.NoError(t, f.Add(b1))
	require.NoError(t, f.Update(a2))
	require.NoError(t, f.Delete(a2))
	require.NoError(t, f.Delete(newTestPod("ns", "never-seen", "1")))
	assert.Equal(t, []string{"Added ns/a", "Added ns/b", "Updated ns/a", "Deleted ns/a", "Deleted ns/never-seen"}, rfifoDrain(t, f))
}

func TestR2_ContradictoryOptionsPanicWithCodingError(t *testing.T) {
	known := newRFIFOKnown()
	cases := map[string]RealFIFOOptions{
		"atomic with known objects":     {AtomicEvents: true, KnownObjects: known},
		"unlock without atomic":         {UnlockWhileProcessing: true, KnownObjects: known},
		"non-atomic without known":      {},
		"bookmarks without atomic":      {EmitDeltaTypeBookmark: true, KnownObjects: known},
		"unlock, bookmarks, no atomics": {UnlockWhileProcessing: true, EmitDeltaTypeBookmark: true},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r)
				assert.True(t, strings.HasPrefix(fmt.Sprint(r), "coding error: "), r)
			}()
			NewRealFIFOWithOptions(opts)
		})
	}
	assert.NotPanics(t, func() { NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true}) })
}

func TestR2_DeprecatedNewRealFIFOIsNonAtomic(t *testing.T) {
	f := NewRealFIFO(MetaNamespaceKeyFunc, newRFIFOKnown(), nil)
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "a", "1")}, "5"))
	assert.Equal(t, []string{"Replaced ns/a"}, rfifoDrain(t, f))
	assert.Equal(t, "RealFIFO", f.Name())
}

func TestR3_KeyErrorQueuesNothing(t *testing.T) {
	f := rfifoAtomic()
	for _, write := range []func(interface{}) error{f.Add, f.Update, f.Delete} {
		err := write("not an object")
		var ke KeyError
		require.ErrorAs(t, err, &ke)
		assert.Equal(t, "not an object", ke.Obj)
		assert.Contains(t, err.Error(), "object has no meta")
	}
	assert.Equal(t, 0, rfifoLen(f))
}

func TestR3_TransformerAppliedExceptToTombstones(t *testing.T) {
	var seen []string
	transform := func(obj interface{}) (interface{}, error) {
		p := obj.(interface{ GetName() string })
		seen = append(seen, p.GetName())
		return obj, nil
	}
	f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, Transformer: transform})
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	require.NoError(t, f.Update(newTestPod("ns", "b", "1")))
	require.NoError(t, f.Delete(newTestPod("ns", "c", "1")))
	require.NoError(t, f.Delete(DeletedFinalStateUnknown{Key: "ns/d", Obj: newTestPod("ns", "d", "1")}))
	assert.Equal(t, []string{"a", "b", "c"}, seen)
	assert.NotNil(t, f.Transformer())
}

func TestR3_TransformerErrorReturnedRaw(t *testing.T) {
	boom := errors.New("boom")
	f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, Transformer: func(interface{}) (interface{}, error) { return nil, boom }})
	assert.Same(t, boom, f.Add(newTestPod("ns", "a", "1")))
	assert.Equal(t, 0, rfifoLen(f))
}

func TestR4_NonAtomicReplaceTombstonesQueuedThenKnownThenReplaces(t *testing.T) {
	known := newRFIFOKnown(newTestPod("ns", "k1", "1"), newTestPod("ns", "q1", "1"), newTestPod("ns", "keep", "1"))
	f := NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: known})
	require.NoError(t, f.Add(newTestPod("ns", "q1", "2")))
	require.NoError(t, f.Add(newTestPod("ns", "q2", "1")))
	require.NoError(t, f.Delete(newTestPod("ns", "q2", "1"))) // last delta Deleted: no extra tombstone
	require.NoError(t, f.Add(newTestPod("ns", "q3", "1")))
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "keep", "2"), newTestPod("ns", "q3", "2")}, "9"))
	assert.Equal(t, []string{
		"Added ns/q1", "Added ns/q2", "Deleted ns/q2", "Added ns/q3",
		"Deleted tombstone(ns/q1)",
		"Deleted tombstone(ns/k1)",
		"Replaced ns/keep", "Replaced ns/q3",
	}, rfifoDrain(t, f))
}

func TestR4_NonAtomicReplaceTombstoneContents(t *testing.T) {
	known := newRFIFOKnown(newTestPod("ns", "k", "1"))
	known.keys = append(known.keys, "ns/missing", "ns/broken")
	known.failKey = "ns/broken"
	f := NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: known})
	q := newTestPod("ns", "q", "7")
	require.NoError(t, f.Update(q))
	require.NoError(t, f.Replace(nil, ""))
	var objs []interface{}
	for rfifoLen(f) > 0 {
		_, err := f.Pop(func(obj interface{}, _ bool) error {
			objs = append(objs, obj.(Deltas)[0].Object)
			return nil
		})
		require.NoError(t, err)
	}
	require.Len(t, objs, 5)
	assert.Equal(t, DeletedFinalStateUnknown{Key: "ns/q", Obj: q}, objs[1])
	assert.Equal(t, DeletedFinalStateUnknown{Key: "ns/k", Obj: known.objs["ns/k"]}, objs[2])
	assert.Equal(t, DeletedFinalStateUnknown{Key: "ns/missing"}, objs[3])
	assert.Equal(t, DeletedFinalStateUnknown{Key: "ns/broken"}, objs[4])
}

func TestR4_NonAtomicReplaceLeavesOutFailures(t *testing.T) {
	reported := captureReportedErrors(t)
	f := NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: newRFIFOKnown(newTestPod("ns", "gone", "1"))})
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "a", "1"), 42}, "1"))
	assert.Equal(t, []string{"Deleted tombstone(ns/gone)", "Replaced ns/a"}, rfifoDrain(t, f), "only the keyless object is left out")
	assert.True(t, f.HasSynced())
	if msgs := reported.take(); assert.Len(t, msgs, 1) {
		assert.Equal(t, "Object from a relist left out: object has no meta: object does not implement the Object interfaces [key  type int]", msgs[0], "no object contents")
	}

	boom := errors.New("boom")
	g := NewRealFIFOWithOptions(RealFIFOOptions{
		KnownObjects: newRFIFOKnown(newTestPod("ns", "gone", "1")),
		Transformer: func(obj interface{}) (interface{}, error) {
			if obj.(interface{ GetName() string }).GetName() == "bad" {
				return nil, boom
			}
			return obj, nil
		},
	})
	require.NoError(t, g.Replace([]interface{}{newTestPod("ns", "a", "1"), newTestPod("ns", "bad", "1")}, "1"))
	assert.Equal(t, []string{"Deleted tombstone(ns/gone)", "Replaced ns/a"}, rfifoDrain(t, g), "the object whose transform fails is left out")
	assert.Equal(t, []string{"Object from a relist left out: couldn't enqueue object: boom [key ns/bad]"}, reported.take())
}

func TestR4_NonAtomicFirstReplaceCountsWholeQueue(t *testing.T) {
	f := NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: newRFIFOKnown(newTestPod("ns", "old", "1"))})
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "a", "1"), newTestPod("ns", "b", "1")}, "1"))
	var initial []bool
	for i := 0; i < 3; i++ {
		assert.False(t, f.HasSynced())
		_, err := f.Pop(func(_ interface{}, in bool) error { initial = append(initial, in); return nil })
		require.NoError(t, err)
	}
	assert.True(t, f.HasSynced())
	assert.Equal(t, []bool{true, true, true}, initial)
}

func TestR5_AtomicReplaceQueuesOneReplacedAll(t *testing.T) {
	f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, Transformer: func(o interface{}) (interface{}, error) {
		return DeletedFinalStateUnknown{Key: "t", Obj: o}, nil
	}})
	require.NoError(t, f.Add(newTestPod("ns", "x", "1")))
	list := []interface{}{newTestPod("ns", "a", "1"), "no key needed"}
	require.NoError(t, f.Replace(list, "10"))
	require.NoError(t, f.Replace(nil, "11"))
	var got []Delta
	for rfifoLen(f) > 0 {
		_, err := f.Pop(func(obj interface{}, _ bool) error { got = append(got, obj.(Deltas)...); return nil })
		require.NoError(t, err)
	}
	require.Len(t, got, 3)
	assert.Equal(t, ReplacedAll, got[1].Type)
	info := got[1].Object.(ReplacedAllInfo)
	assert.Equal(t, "10", info.ResourceVersion)
	assert.Equal(t, []interface{}{DeletedFinalStateUnknown{Key: "t", Obj: list[0]}, DeletedFinalStateUnknown{Key: "t", Obj: list[1]}}, info.Objects)
	assert.Equal(t, newTestPod("ns", "a", "1"), list[0], "the caller's list is not modified")
	assert.Equal(t, "11", got[2].Object.(ReplacedAllInfo).ResourceVersion)
	assert.Empty(t, got[2].Object.(ReplacedAllInfo).Objects)
}

func TestR5_EmptyFirstReplaceSyncsOnlyAfterProcessing(t *testing.T) {
	f := rfifoAtomic()
	require.NoError(t, f.Replace(nil, "1"))
	assert.False(t, f.HasSynced())
	_, err := f.Pop(func(_ interface{}, initial bool) error {
		assert.True(t, initial)
		assert.False(t, f.sync.synced, "R8: synced only after process returns")
		return nil
	})
	require.NoError(t, err)
	assert.True(t, f.HasSynced())
	assert.True(t, IsDoneForQueueTest(f.HasSyncedChecker()))
}

// IsDoneForQueueTest reports whether c's Done channel is closed.
func IsDoneForQueueTest(c DoneChecker) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

func TestR6_AtomicResyncQueuesSyncAll(t *testing.T) {
	f := rfifoAtomic()
	require.NoError(t, f.Resync())
	require.NoError(t, f.Resync())
	assert.Equal(t, []string{"SyncAll", "SyncAll"}, rfifoDrain(t, f))
	assert.False(t, f.HasSynced(), "Resync does not populate")
}

func TestR6_NonAtomicResyncSyncsUnqueuedKnownObjects(t *testing.T) {
	known := newRFIFOKnown(newTestPod("ns", "a", "1"), newTestPod("ns", "b", "1"), newTestPod("ns", "c", "1"))
	known.keys = append(known.keys, "ns/missing", "ns/broken")
	known.failKey = "ns/broken"
	transformed := 0
	f := NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: known, Transformer: func(o interface{}) (interface{}, error) {
		transformed++
		return o, nil
	}})
	require.NoError(t, f.Update(newTestPod("ns", "b", "2")))
	require.NoError(t, f.Resync())
	assert.Equal(t, 1, transformed, "Sync deltas are not transformed")
	assert.Equal(t, []string{"Updated ns/b", "Sync ns/a", "Sync ns/c"}, rfifoDrain(t, f))

	noKnown := rfifoAtomic()
	noKnown.atomicEvents = false
	require.NoError(t, noKnown.Resync())
	assert.Equal(t, 0, rfifoLen(noKnown))
}

func TestR7_BookmarkOnlyWhenEnabled(t *testing.T) {
	f := rfifoAtomic()
	require.NoError(t, f.Bookmark("42"))
	assert.False(t, f.HasSynced(), "a bookmark does not populate")
	assert.Equal(t, []string{"Bookmark rv=42"}, rfifoDrain(t, f))

	off := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true})
	require.NoError(t, off.Bookmark("42"))
	assert.Equal(t, 0, rfifoLen(off))
}

func TestR8_PopCountsInitialListAfterProcessing(t *testing.T) {
	f := rfifoAtomic()
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "a", "1")}, "1"))
	require.NoError(t, f.Add(newTestPod("ns", "b", "1")))
	var initial []bool
	for i := 0; i < 2; i++ {
		item, err := f.Pop(func(obj interface{}, in bool) error {
			initial = append(initial, in)
			require.Len(t, obj.(Deltas), 1)
			if in {
				assert.False(t, IsDoneForQueueTest(f), "Done must not close while processing the initial list")
			}
			return nil
		})
		require.NoError(t, err)
		assert.Len(t, item.(Deltas), 1)
	}
	assert.Equal(t, []bool{true, false}, initial)
	assert.True(t, f.HasSynced())
}

func TestQ2_PopReturnsProcessErrorAndDropsItem(t *testing.T) {
	boom := errors.New("boom")
	for name, q := range map[string]Queue{
		"RealFIFO":  rfifoAtomic(),
		"DeltaFIFO": NewDeltaFIFOWithOptions(DeltaFIFOOptions{}),
		"FIFO":      NewFIFO(MetaNamespaceKeyFunc),
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, q.Add(newTestPod("ns", "a", "1")))
			_, err := q.Pop(func(interface{}, bool) error { return boom })
			assert.Same(t, boom, err)
			q.Close()
			_, err = q.Pop(func(interface{}, bool) error { return nil })
			assert.Same(t, ErrFIFOClosed, err)
		})
	}
}

func TestQ2_NilProcessFunctionIsAnError(t *testing.T) {
	f := rfifoAtomic()
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	_, err := f.Pop(nil)
	assert.Error(t, err)
	assert.Error(t, f.PopBatch(nil, nil))
	assert.Equal(t, 1, rfifoLen(f), "nothing is lost")
	_, err = NewDeltaFIFOWithOptions(DeltaFIFOOptions{}).Pop(nil)
	assert.Error(t, err)
	_, err = NewFIFO(MetaNamespaceKeyFunc).Pop(nil)
	assert.Error(t, err)
}

func TestQ4_CloseWakesWaitersButDrainsFirst(t *testing.T) {
	defer goleak.VerifyNone(t)
	for name, q := range map[string]QueueWithBatch{"RealFIFO": rfifoAtomic()} {
		t.Run(name, func(t *testing.T) {
			errs := make(chan error, 2)
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, err := q.Pop(func(interface{}, bool) error { return nil })
				errs <- err
			}()
			go func() {
				defer wg.Done()
				errs <- q.PopBatch(func([]Delta, bool) error { return nil }, func(interface{}, bool) error { return nil })
			}()
			q.Close()
			wg.Wait()
			assert.Same(t, ErrFIFOClosed, <-errs)
			assert.Same(t, ErrFIFOClosed, <-errs)
			assert.True(t, q.(interface{ IsClosed() bool }).IsClosed())
			require.NoError(t, q.Add(newTestPod("ns", "a", "1")), "Close does not gate writes")
			_, err := q.Pop(func(interface{}, bool) error { return nil })
			assert.NoError(t, err)
		})
	}
}

func TestQ5_RealFIFOSyncTracking(t *testing.T) {
	f := rfifoAtomic()
	assert.False(t, f.HasSynced())
	require.NoError(t, f.Delete(newTestPod("ns", "a", "1")))
	assert.True(t, f.HasSynced(), "a direct write before any Replace syncs at once")
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "a", "1")}, "1"))
	assert.True(t, f.HasSynced(), "synced is latched")
	_, err := f.Pop(func(_ interface{}, initial bool) error { assert.False(t, initial); return nil })
	require.NoError(t, err)
}

func TestQ6_CheckerNames(t *testing.T) {
	assert.Equal(t, "RealFIFO", rfifoAtomic().HasSyncedChecker().Name())
	assert.Equal(t, "mine", NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, Name: "mine"}).Name())
	n, err := NewInformerName("q6-informer")
	require.NoError(t, err)
	defer n.Release()
	id := n.WithResource(schema.GroupVersionResource{Resource: "pods"})
	assert.Equal(t, "q6-informer", NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, Name: "mine", Identifier: id}).Name())
	assert.Equal(t, "DeltaFIFO", NewDeltaFIFOWithOptions(DeltaFIFOOptions{}).HasSyncedChecker().Name())
	assert.Equal(t, "d", NewDeltaFIFOWithOptions(DeltaFIFOOptions{Name: "d"}).HasSyncedChecker().Name())
	assert.Equal(t, "FIFO", NewFIFO(MetaNamespaceKeyFunc).HasSyncedChecker().Name())
}

// rfifoBatch is one PopBatch call as a test sees it.
type rfifoBatch struct {
	Single  bool
	Initial bool
	Deltas  []string
}

func rfifoPopBatch(t *testing.T, f *RealFIFO) rfifoBatch {
	t.Helper()
	var b rfifoBatch
	err := f.PopBatch(func(ds []Delta, initial bool) error {
		b.Initial = initial
		for _, d := range ds {
			b.Deltas = append(b.Deltas, rfifoDescribe(d))
		}
		return nil
	}, func(obj interface{}, initial bool) error {
		b.Single, b.Initial = true, initial
		b.Deltas = []string{rfifoDescribe(obj.(Deltas)[0])}
		return nil
	})
	require.NoError(t, err)
	return b
}

func TestR9_PopBatchStopsAtRepeatedKeyAndWholeQueueDeltas(t *testing.T) {
	f := rfifoAtomic()
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	require.NoError(t, f.Add(newTestPod("ns", "b", "1")))
	require.NoError(t, f.Delete(DeletedFinalStateUnknown{Key: "ns/a"}))
	require.NoError(t, f.Update(newTestPod("ns", "c", "1")))
	require.NoError(t, f.Bookmark("5"))
	require.NoError(t, f.Resync())
	require.NoError(t, f.Add(newTestPod("", "a", "1")))
	require.NoError(t, f.Add(ExplicitKey("/a")))
	require.NoError(t, f.Add(ExplicitKey("a")))
	if clientGoV038 {
		// v0.38: a batch may repeat a key; only whole-queue deltas end it.
		assert.Equal(t, rfifoBatch{Deltas: []string{"Added ns/a", "Added ns/b", "Deleted tombstone(ns/a)", "Updated ns/c"}}, rfifoPopBatch(t, f))
	} else {
		assert.Equal(t, rfifoBatch{Deltas: []string{"Added ns/a", "Added ns/b"}}, rfifoPopBatch(t, f))
		assert.Equal(t, rfifoBatch{Deltas: []string{"Deleted tombstone(ns/a)", "Updated ns/c"}}, rfifoPopBatch(t, f))
	}
	assert.Equal(t, rfifoBatch{Single: true, Deltas: []string{"Bookmark rv=5"}}, rfifoPopBatch(t, f))
	assert.Equal(t, rfifoBatch{Single: true, Deltas: []string{"SyncAll"}}, rfifoPopBatch(t, f))
	if clientGoV038 {
		assert.Equal(t, rfifoBatch{Deltas: []string{"Added a", "Added /a", "Added a"}}, rfifoPopBatch(t, f))
		return
	}
	// "a" (cluster-scoped) and ExplicitKey "/a" are different keys; ExplicitKey "a" repeats "a".
	assert.Equal(t, rfifoBatch{Deltas: []string{"Added a", "Added /a"}}, rfifoPopBatch(t, f))
	assert.Equal(t, rfifoBatch{Single: true, Deltas: []string{"Added a"}}, rfifoPopBatch(t, f))
}

func TestR9_PopBatchCapsAtOneThousand(t *testing.T) {
	f := rfifoAtomic()
	for _, p := range newTestPods(1500, 3, "1") {
		require.NoError(t, f.Add(p))
	}
	assert.Len(t, rfifoPopBatch(t, f).Deltas, 1000)
	assert.Len(t, rfifoPopBatch(t, f).Deltas, 500)
}

func TestR9_PopBatchStopsAtInitialPopulationBoundary(t *testing.T) {
	known := newRFIFOKnown()
	f := NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: known})
	require.NoError(t, f.Replace(newTestPods(3, 1, "1"), "1"))
	require.NoError(t, f.Add(newTestPod("ns", "late", "1")))
	first := rfifoPopBatch(t, f)
	assert.True(t, first.Initial)
	assert.Len(t, first.Deltas, 3)
	assert.True(t, f.HasSynced())
	second := rfifoPopBatch(t, f)
	assert.Equal(t, rfifoBatch{Single: true, Deltas: []string{"Added ns/late"}}, second)
}

func TestR9_PopBatchKeyErrorEndsBatchIncludingBadItem(t *testing.T) {
	var broken sync.Map
	keyFunc := func(obj interface{}) (string, error) {
		if _, bad := broken.Load(obj); bad {
			return "", errors.New("key went away")
		}
		return MetaNamespaceKeyFunc(obj)
	}
	f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, KeyFunction: keyFunc})
	a, b, c := newTestPod("ns", "a", "1"), newTestPod("ns", "b", "1"), newTestPod("ns", "c", "1")
	for _, p := range []interface{}{a, b, c} {
		require.NoError(t, f.Add(p))
	}
	broken.Store(b, true)
	got := rfifoPopBatch(t, f)
	if clientGoV038 { // v0.38 reads no key while batching
		assert.Equal(t, []string{"Added ns/a", "Added ns/b", "Added ns/c"}, got.Deltas)
		return
	}
	assert.Equal(t, []string{"Added ns/a", "Added ns/b"}, got.Deltas)
	assert.Equal(t, rfifoBatch{Single: true, Deltas: []string{"Added ns/c"}}, rfifoPopBatch(t, f))
}

func TestR10_UnlockWhileProcessingReleasesLock(t *testing.T) {
	cases := map[string]struct {
		f        *RealFIFO
		backlog  int
		unlocked bool
	}{
		"unlock, short backlog": {NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true}), 5, true},
		"unlock, long backlog":  {NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true}), 3002, true},
		"no unlock":             {rfifoAtomic(), 5, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			for _, p := range newTestPods(c.backlog, 1, "1") {
				require.NoError(t, c.f.Add(p))
			}
			check := func() {
				got := c.f.mu.TryLock()
				if got {
					c.f.mu.Unlock()
				}
				assert.Equal(t, c.unlocked, got)
			}
			_, err := c.f.Pop(func(interface{}, bool) error { check(); return nil })
			require.NoError(t, err)
			require.NoError(t, c.f.PopBatch(func([]Delta, bool) error { check(); return nil }, func(interface{}, bool) error { check(); return nil }))
			assert.True(t, c.f.mu.TryLock(), "lock released after Pop")
			c.f.mu.Unlock()
		})
	}
}

// With two batches or more queued, a producer waits until processing ends
// (client-go keeps its lock for that); with less it enqueues meanwhile.
func TestR10_LongBacklogHoldsProducersBackUntilProcessingEnds(t *testing.T) {
	for _, backlog := range []int{3*realFIFOBatchSize + 2, 5} { // a batch is taken first
		t.Run(fmt.Sprint(backlog), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true})
				for _, p := range newTestPods(backlog, 1, "1") {
					require.NoError(t, f.Add(p))
				}
				added := make(chan error, 1)
				long := backlog >= 3*realFIFOBatchSize
				err := f.PopBatch(func([]Delta, bool) error {
					go func() { added <- f.Update(newTestPod("ns", "late", "2")) }()
					synctest.Wait()
					select {
					case err := <-added:
						assert.False(t, long, "a producer enqueued while a long backlog was processed")
						return err
					default:
						assert.True(t, long, "a producer waited although the backlog was short")
						return nil
					}
				}, func(interface{}, bool) error { return nil })
				require.NoError(t, err)
				if long {
					require.NoError(t, <-added, "the held-back producer goes on once processing ends")
				}
				all := rfifoDrain(t, f)
				assert.Equal(t, "Updated ns/late", all[len(all)-1])
			})
		})
	}
}

func TestR10_CloseLetsHeldBackProducersThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true})
		for _, p := range newTestPods(3*realFIFOBatchSize+2, 1, "1") {
			require.NoError(t, f.Add(p))
		}
		added := make(chan error, 1)
		require.NoError(t, f.PopBatch(func([]Delta, bool) error {
			go func() { added <- f.Update(newTestPod("ns", "late", "2")) }()
			synctest.Wait()
			f.Close()
			synctest.Wait()
			select {
			case err := <-added:
				return err
			default:
				t.Error("a held-back producer still waits after Close")
				return nil
			}
		}, func(interface{}, bool) error { return nil }))
	})
}

func TestR10_ProducerEnqueuesDuringProcessing(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true})
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "a", "1")}, "1"))
	_, err := f.Pop(func(interface{}, bool) error {
		done := make(chan error)
		go func() { done <- f.Add(newTestPod("ns", "b", "1")) }()
		return <-done
	})
	require.NoError(t, err)
	assert.True(t, f.HasSynced())
	assert.Equal(t, []string{"Added ns/b"}, rfifoDrain(t, f))
}

// rfifoMetrics records what a queue reports.
type rfifoMetrics struct {
	mu        sync.Mutex
	queued    []float64
	latencies int
}

type rfifoGauge struct{ m *rfifoMetrics }

func (g rfifoGauge) Set(v float64) {
	g.m.mu.Lock()
	g.m.queued = append(g.m.queued, v)
	g.m.mu.Unlock()
}
func (g rfifoGauge) Inc() {}
func (g rfifoGauge) Dec() {}

type rfifoHistogram struct{ m *rfifoMetrics }

func (h rfifoHistogram) Observe(float64) { h.m.mu.Lock(); h.m.latencies++; h.m.mu.Unlock() }

func (m *rfifoMetrics) NewQueuedItemMetric(InformerNameAndResource) GaugeMetric {
	return rfifoGauge{m}
}

func (m *rfifoMetrics) NewProcessingLatencyMetric(InformerNameAndResource) HistogramMetric {
	return rfifoHistogram{m}
}

func (m *rfifoMetrics) NewStoreResourceVersionMetric(InformerNameAndResource) GaugeMetric {
	return noopMetric{}
}

func TestR11_MetricsOnlyForReservedIdentifier(t *testing.T) {
	n, err := NewInformerName("r11-informer")
	require.NoError(t, err)
	defer n.Release()
	m := &rfifoMetrics{}
	f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, EmitDeltaTypeBookmark: true, MetricsProvider: m,
		Identifier: n.WithResource(schema.GroupVersionResource{Resource: "pods"})})
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	require.NoError(t, f.Bookmark("3"))
	require.NoError(t, f.Replace(nil, "4"))
	rfifoDrain(t, f)
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	rfifoPopBatch(t, f)
	assert.Equal(t, []float64{1, 2, 3, 2, 1, 0, 1, 0}, m.queued)
	assert.Equal(t, 4, m.latencies)

	unreserved := &rfifoMetrics{}
	g := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, MetricsProvider: unreserved})
	require.NoError(t, g.Add(newTestPod("ns", "a", "1")))
	rfifoDrain(t, g)
	assert.Empty(t, unreserved.queued)
	assert.Zero(t, unreserved.latencies)
}

func TestG2_InformerQueuePerGateSetting(t *testing.T) {
	store := newRFIFOKnown(newTestPod("ns", "a", "1"))
	build := func() Queue {
		_, q, _ := newInformerQueue(informerQueueOptions{objectType: newTestPod("", "", ""), store: store})
		return q
	}
	t.Run("defaults", func(t *testing.T) {
		f := build().(*RealFIFO)
		assert.True(t, f.atomicEvents)
		assert.True(t, f.emitBookmarks)
		assert.True(t, f.unlockWhileProcessing)
		assert.Nil(t, f.knownObjects)
		assert.Equal(t, "RealFIFO *v1.Pod", f.Name())
		assert.True(t, f.keys.metaKeys)
	})
	t.Run("UnlockWhileProcessingFIFO off", func(t *testing.T) {
		clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.UnlockWhileProcessingFIFO, false)
		f := build().(*RealFIFO)
		assert.True(t, f.atomicEvents)
		assert.False(t, f.unlockWhileProcessing)
	})
	t.Run("AtomicFIFO off", func(t *testing.T) {
		clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.AtomicFIFO, false)
		f := build().(*RealFIFO)
		assert.False(t, f.atomicEvents)
		assert.False(t, f.emitBookmarks)
		assert.False(t, f.unlockWhileProcessing)
		assert.Same(t, store, f.knownObjects)
	})
	assert.IsType(t, &RealFIFO{}, build(), "gates restored after the subtests")
}

func TestQ3_DeltaFIFOAndFIFOHaveNoStoreReads(t *testing.T) {
	type storeReads interface {
		List() []interface{}
		ListKeys() []string
		Get(obj interface{}) (interface{}, bool, error)
		GetByKey(key string) (interface{}, bool, error)
	}
	_, d := interface{}(NewDeltaFIFOWithOptions(DeltaFIFOOptions{})).(storeReads)
	_, f := interface{}(NewFIFO(MetaNamespaceKeyFunc)).(storeReads)
	_, r := interface{}(rfifoAtomic()).(storeReads)
	assert.False(t, d)
	assert.False(t, f)
	assert.False(t, r)
}

func TestQ7_DeltasOldestNewestAndTypeNames(t *testing.T) {
	a, b := newTestPod("ns", "a", "1"), newTestPod("ns", "a", "2")
	ds := Deltas{{Type: Added, Object: a}, {Type: Updated, Object: b}}
	assert.Same(t, a, ds.Oldest().Object)
	assert.Same(t, b, ds.Newest().Object)
	assert.Nil(t, Deltas{}.Oldest())
	assert.Nil(t, Deltas{}.Newest())
	for _, dt := range []DeltaType{Added, Updated, Deleted, Replaced, ReplacedAll, Sync, SyncAll, Bookmark} {
		assert.NotEmpty(t, string(dt))
	}
	assert.Equal(t, "ReplacedAll", string(ReplacedAll))
}

func TestR10_ConcurrentProducersKeepPerProducerOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, UnlockWhileProcessing: true})
	const producers, perProducer = 4, 500
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perProducer; i++ {
				assert.NoError(t, f.Update(newTestPod(fmt.Sprint("p", p), fmt.Sprint("k", i%7), fmt.Sprint(i))))
			}
		}()
	}
	last := map[string]int{}
	received := 0
	record := func(d Delta) {
		pod := d.Object.(interface {
			GetNamespace() string
			GetResourceVersion() string
		})
		var rv int
		_, _ = fmt.Sscan(pod.GetResourceVersion(), &rv)
		if prev, ok := last[pod.GetNamespace()]; ok {
			assert.Greater(t, rv, prev, "deltas of one producer arrive in order")
		}
		last[pod.GetNamespace()] = rv
		received++
	}
	for received < producers*perProducer {
		err := f.PopBatch(func(ds []Delta, _ bool) error {
			for _, d := range ds {
				record(d)
			}
			return nil
		}, func(obj interface{}, _ bool) error {
			record(obj.(Deltas)[0])
			return nil
		})
		require.NoError(t, err)
	}
	wg.Wait()
}

func TestG2_InformerQueuePassesThroughOptions(t *testing.T) {
	n, err := NewInformerName("g2-informer")
	require.NoError(t, err)
	defer n.Release()
	id := n.WithResource(schema.GroupVersionResource{Resource: "pods"})
	m := &rfifoMetrics{}
	logger, q, _ := newInformerQueue(informerQueueOptions{logger: klog.Background(), objectType: newTestPod("", "", ""),
		transform: queueModelTransform, identifier: id, metricsProvider: m})
	f := q.(*RealFIFO)
	assert.NotNil(t, f.Transformer())
	assert.Equal(t, id, f.identifier)
	assert.Equal(t, "g2-informer", f.Name(), "a reserved identifier names the queue")
	assert.NotNil(t, logger.GetSink())
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	assert.Equal(t, []float64{1}, m.queued)
}

func TestR5_AtomicReplaceDoesNotCopyTheList(t *testing.T) {
	f := rfifoAtomic()
	list := newTestPods(1000, 4, "1")
	require.NoError(t, f.Replace(list, "1"))
	_, err := f.Pop(func(obj interface{}, _ bool) error {
		objs := obj.(Deltas)[0].Object.(ReplacedAllInfo).Objects
		require.Len(t, objs, len(list))
		assert.Same(t, &list[0], &objs[0], "without a transformer the relisted set is held once, not copied")
		return nil
	})
	require.NoError(t, err)
}
