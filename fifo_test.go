package cache

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// fifoPopName pops one object and returns its name and isInInitialList.
func fifoPopName(t *testing.T, f *FIFO) (string, bool) {
	t.Helper()
	var name string
	var initial bool
	_, err := f.Pop(func(obj interface{}, in bool) error {
		name, initial = obj.(interface{ GetName() string }).GetName(), in
		return nil
	})
	require.NoError(t, err)
	return name, initial
}

func TestM3_FIFOKeepsLatestObjectAndPosition(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc)
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	require.NoError(t, f.Add(newTestPod("ns", "b", "1")))
	latest := newTestPod("ns", "a", "2")
	require.NoError(t, f.Update(latest))
	var got interface{}
	_, err := f.Pop(func(obj interface{}, _ bool) error { got = obj; return nil })
	require.NoError(t, err)
	assert.Same(t, latest, got)
	name, _ := fifoPopName(t, f)
	assert.Equal(t, "b", name)
}

func TestM3_FIFODeletedKeyIsSkippedButCounted(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc)
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "a", "1"), newTestPod("ns", "b", "1")}, ""))
	require.NoError(t, f.Delete(newTestPod("ns", "a", "1")))
	assert.False(t, f.HasSynced())
	name, initial := fifoPopName(t, f)
	assert.Equal(t, "b", name)
	assert.True(t, initial, "items popped in the same call as a skipped key stay initial")
	assert.True(t, f.HasSynced())
}

func TestM3_FIFOReplaceSwapsContentInListOrder(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc)
	require.NoError(t, f.Add(newTestPod("ns", "old", "1")))
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "x", "1"), newTestPod("ns", "y", "1"), newTestPod("ns", "x", "2")}, ""))
	var names []string
	for i := 0; i < 2; i++ {
		n, _ := fifoPopName(t, f)
		names = append(names, n)
	}
	assert.Equal(t, []string{"x", "y"}, names)
	assert.Equal(t, 0, f.queue.Len())

	g := NewFIFO(MetaNamespaceKeyFunc)
	require.NoError(t, g.Replace([]interface{}{newTestPod("ns", "x", "1"), newTestPod("ns", "x", "2")}, ""))
	_, in := fifoPopName(t, g)
	assert.True(t, in)
	assert.True(t, g.HasSynced(), "count is the number of distinct keys")

	var ke KeyError
	require.ErrorAs(t, g.Replace([]interface{}{"bad"}, ""), &ke)
}

func TestM3_FIFOResyncRequeuesUnqueuedKeys(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc)
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	require.NoError(t, f.Resync())
	assert.Equal(t, 1, f.queue.Len(), "a queued key is not queued twice")
	f.items["ns/b"] = newTestPod("ns", "b", "1")
	require.NoError(t, f.Resync())
	assert.Equal(t, 2, f.queue.Len())
}

func TestM3_FIFOSyncCheckedAfterProcess(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc)
	require.NoError(t, f.Replace([]interface{}{newTestPod("ns", "a", "1")}, ""))
	_, err := f.Pop(func(_ interface{}, initial bool) error {
		assert.True(t, initial)
		assert.False(t, IsDoneForQueueTest(f))
		return nil
	})
	require.NoError(t, err)
	assert.True(t, IsDoneForQueueTest(f.HasSyncedChecker()))
}

func TestM3_FIFOKeyErrors(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc)
	var ke KeyError
	require.ErrorAs(t, f.Add("bad"), &ke)
	require.ErrorAs(t, f.Delete("bad"), &ke)
	assert.False(t, f.HasSynced())
	require.ErrorAs(t, NewFIFO(nil).Add(newTestPod("ns", "a", "1")), &ke, "nil key function is an error, not a panic")
}

func TestM3_FIFODeleteThenAddKeepsStaleEntry(t *testing.T) {
	f := NewFIFO(MetaNamespaceKeyFunc)
	require.NoError(t, f.Add(newTestPod("ns", "a", "1")))
	require.NoError(t, f.Add(newTestPod("ns", "b", "1")))
	require.NoError(t, f.Delete(newTestPod("ns", "a", "1")))
	require.NoError(t, f.Add(newTestPod("ns", "a", "2")))
	n, _ := fifoPopName(t, f)
	assert.Equal(t, "a", n, "the re-added key keeps its old place")
	require.NoError(t, f.Add(newTestPod("ns", "a", "3")))
	require.NoError(t, f.Add(newTestPod("ns", "c", "1")))
	var names []string
	for i := 0; i < 3; i++ {
		n, _ := fifoPopName(t, f)
		names = append(names, n)
	}
	assert.Equal(t, []string{"b", "a", "c"}, names, "the stale entry from the re-add pops the newest object, as in client-go")
}

func TestM4_HeapOrderAndUpsert(t *testing.T) {
	h := heapTestHeap()
	require.NoError(t, h.Add(heapTestItem{"a", 5}))
	require.NoError(t, h.BulkAdd([]interface{}{heapTestItem{"b", 3}, heapTestItem{"c", 9}}))
	require.NoError(t, h.Update(heapTestItem{"a", 1}))
	require.NoError(t, h.AddIfNotPresent(heapTestItem{"b", 100}))
	require.NoError(t, h.AddIfNotPresent(heapTestItem{"d", 4}))
	got, exists, err := h.GetByKey("b")
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Equal(t, heapTestItem{"b", 3}, got, "AddIfNotPresent keeps the existing object")
	got, exists, err = h.Get(heapTestItem{name: "c"})
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Equal(t, heapTestItem{"c", 9}, got)
	assert.ElementsMatch(t, []string{"a", "b", "c", "d"}, h.ListKeys())
	assert.Len(t, h.List(), 4)
	var order []string
	for i := 0; i < 4; i++ {
		obj, err := h.Pop()
		require.NoError(t, err)
		order = append(order, obj.(heapTestItem).name)
	}
	assert.Equal(t, []string{"a", "b", "d", "c"}, order)
}

func TestM4_HeapDeleteAndErrors(t *testing.T) {
	h := heapTestHeap()
	require.NoError(t, h.Add(heapTestItem{"a", 1}))
	require.NoError(t, h.Add(heapTestItem{"b", 2}))
	require.NoError(t, h.Delete(heapTestItem{name: "a"}))
	assert.EqualError(t, h.Delete(heapTestItem{name: "a"}), "object not found")
	var ke KeyError
	require.ErrorAs(t, h.Add(heapTestItem{}), &ke)
	h.Close()
	assert.True(t, h.IsClosed())
	require.ErrorAs(t, h.Add(heapTestItem{}), &ke, "key error precedes the closed check")
	assert.EqualError(t, h.Add(heapTestItem{"c", 1}), "heap is closed")
	assert.EqualError(t, h.BulkAdd(nil), "heap is closed")
	assert.EqualError(t, h.AddIfNotPresent(heapTestItem{"c", 1}), "heap is closed")
	obj, err := h.Pop()
	require.NoError(t, err, "items still drain after Close")
	assert.Equal(t, heapTestItem{"b", 2}, obj)
	_, err = h.Pop()
	assert.EqualError(t, err, "heap is closed")
	assert.EqualError(t, h.Delete(heapTestItem{name: "b"}), "object not found", "Delete works on a closed heap")
}

func TestM4_HeapBulkAddKeyErrorChangesNothing(t *testing.T) {
	h := heapTestHeap()
	var ke KeyError
	require.ErrorAs(t, h.BulkAdd([]interface{}{heapTestItem{"a", 1}, heapTestItem{}}), &ke)
	assert.Empty(t, h.ListKeys())
	assert.EqualError(t, NewHeap(heapTestKey, nil).Add(heapTestItem{"a", 1}), "heap has no less function")
}

func TestM4_HeapPopBlocksUntilAddOrClose(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := heapTestHeap()
	got := make(chan interface{})
	go func() {
		obj, _ := h.Pop()
		got <- obj
	}()
	require.NoError(t, h.Add(heapTestItem{"a", 1}))
	assert.Equal(t, heapTestItem{"a", 1}, <-got)
	errs := make(chan error)
	go func() {
		_, err := h.Pop()
		errs <- err
	}()
	h.Close()
	assert.EqualError(t, <-errs, "heap is closed")
}

// heapTestItem is a named priority.
type heapTestItem struct {
	name     string
	priority int
}

func heapTestKey(obj interface{}) (string, error) {
	it := obj.(heapTestItem)
	if it.name == "" {
		return "", errors.New("unnamed")
	}
	return it.name, nil
}

func heapTestHeap() *Heap {
	return NewHeap(heapTestKey, func(a, b interface{}) bool {
		return a.(heapTestItem).priority < b.(heapTestItem).priority
	})
}
