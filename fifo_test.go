package cache

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	clientcache "k8s.io/client-go/tools/cache"
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

// ---- Reference models, shared harness, model-based and differential tests ----

// queueModelStore is a consumer's store with a deterministic key order; the
// harness applies popped deltas to it, as an informer would.
type queueModelStore struct{ objs map[string]interface{} }

func newQueueModelStore() *queueModelStore { return &queueModelStore{objs: map[string]interface{}{}} }

func (s *queueModelStore) ListKeys() []string {
	keys := make([]string, 0, len(s.objs))
	for k := range s.objs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (s *queueModelStore) GetByKey(key string) (interface{}, bool, error) {
	o, ok := s.objs[key]
	return o, ok, nil
}

// apply updates the store with popped deltas.
func (s *queueModelStore) apply(ds []Delta) {
	for _, d := range ds {
		key, err := queueModelKey(d.Object)
		if err != nil {
			continue
		}
		switch d.Type {
		case Added, Updated, Replaced, Sync:
			s.objs[key] = d.Object
		case Deleted:
			delete(s.objs, key)
		}
	}
}

// queueModelKey is the key every test queue uses.
func queueModelKey(obj interface{}) (string, error) {
	if t, ok := obj.(DeletedFinalStateUnknown); ok {
		return t.Key, nil
	}
	return MetaNamespaceKeyFunc(obj)
}

func queueModelIsBatchable(t DeltaType) bool {
	return t == Added || t == Updated || t == Deleted || t == Replaced || t == Sync
}

// queueModelTransform marks pods, so the trace shows what was transformed.
func queueModelTransform(obj interface{}) (interface{}, error) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return obj, nil
	}
	p = p.DeepCopy()
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels["t"] = "1"
	return p, nil
}

func queueModelTransformAll(transform TransformFunc, list []interface{}) []interface{} {
	if transform == nil {
		return list
	}
	out := make([]interface{}, len(list))
	for i, o := range list {
		out[i], _ = transform(o)
	}
	return out
}

// queueModelSync is the obviously-correct version of the sync bookkeeping.
type queueModelSync struct {
	populated bool
	initial   int
	synced    bool
}

func (s *queueModelSync) check() {
	if s.populated && s.initial == 0 {
		s.synced = true
	}
}

func (s *queueModelSync) populate() { s.populated = true; s.check() }

func (s *queueModelSync) first(n int) {
	if !s.populated {
		s.populated, s.initial = true, n
		s.check()
	}
}

func (s *queueModelSync) HasSynced() bool { return s.synced }

// realFIFOModel is a reference RealFIFO: a plain slice, no locking, no
// optimisation. Pops on an empty model behave like a closed, empty queue.
type realFIFOModel struct {
	queueModelSync
	atomic, bookmarks bool
	known             *queueModelStore
	transform         TransformFunc
	queue             []Delta
}

func (m *realFIFOModel) write(t DeltaType, obj interface{}) error {
	m.populate()
	return m.push(t, obj, true)
}

func (m *realFIFOModel) push(t DeltaType, obj interface{}, transform bool) error {
	if _, err := queueModelKey(obj); err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	if _, tomb := obj.(DeletedFinalStateUnknown); transform && !tomb && m.transform != nil {
		obj, _ = m.transform(obj)
	}
	m.queue = append(m.queue, Delta{Type: t, Object: obj})
	return nil
}

func (m *realFIFOModel) Add(obj interface{}) error    { return m.write(Added, obj) }
func (m *realFIFOModel) Update(obj interface{}) error { return m.write(Updated, obj) }
func (m *realFIFOModel) Delete(obj interface{}) error { return m.write(Deleted, obj) }

func (m *realFIFOModel) Bookmark(rv string) error {
	if m.bookmarks {
		m.queue = append(m.queue, Delta{Type: Bookmark, Object: BookmarkInfo{ResourceVersion: rv}})
	}
	return nil
}

// queueModelKeyed is a relist's list without the objects that have no key,
// which a queue's Replace leaves out.
func queueModelKeyed(list []interface{}) []interface{} {
	var keyed []interface{}
	for _, o := range list {
		if _, err := queueModelKey(o); err == nil {
			keyed = append(keyed, o)
		}
	}
	return keyed
}

func (m *realFIFOModel) Replace(list []interface{}, rv string) error {
	if m.atomic {
		m.queue = append(m.queue, Delta{Type: ReplacedAll, Object: ReplacedAllInfo{ResourceVersion: rv, Objects: queueModelTransformAll(m.transform, list)}})
		m.first(len(m.queue))
		return nil
	}
	list = queueModelKeyed(list)
	listed := map[string]bool{}
	for _, o := range list {
		k, _ := queueModelKey(o)
		listed[k] = true
	}
	var order []string
	last := map[string]Delta{}
	for _, d := range m.queue {
		k, _ := queueModelKey(d.Object)
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = d
	}
	for _, k := range order {
		if !listed[k] && last[k].Type != Deleted {
			m.queue = append(m.queue, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: k, Obj: last[k].Object}})
		}
	}
	for _, k := range m.known.ListKeys() {
		if _, queued := last[k]; !listed[k] && !queued {
			m.queue = append(m.queue, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: k, Obj: m.known.objs[k]}})
		}
	}
	for _, o := range queueModelTransformAll(m.transform, list) {
		m.queue = append(m.queue, Delta{Type: Replaced, Object: o})
	}
	m.first(len(m.queue))
	return nil
}

func (m *realFIFOModel) Resync() error {
	if m.atomic {
		m.queue = append(m.queue, Delta{Type: SyncAll, Object: SyncAllInfo{}})
		return nil
	}
	queued := map[string]bool{}
	for _, d := range m.queue {
		k, _ := queueModelKey(d.Object)
		queued[k] = true
	}
	for _, k := range m.known.ListKeys() {
		if !queued[k] {
			_ = m.push(Sync, m.known.objs[k], false)
		}
	}
	return nil
}

func (m *realFIFOModel) Pop(process PopProcessFunc) (interface{}, error) {
	if len(m.queue) == 0 {
		return nil, ErrFIFOClosed
	}
	initial := !m.synced
	d := m.queue[0]
	m.queue = m.queue[1:]
	err := process(Deltas{d}, initial)
	m.consume(1)
	return Deltas{d}, err
}

func (m *realFIFOModel) consume(n int) {
	if m.initial > 0 {
		m.initial -= n
		m.check()
	}
}

func (m *realFIFOModel) PopBatch(batch ProcessBatchFunc, single PopProcessFunc) error {
	if len(m.queue) == 0 {
		return ErrFIFOClosed
	}
	initial := !m.synced
	n := 1
	if queueModelIsBatchable(m.queue[0].Type) {
		n = 0
		seen := map[string]bool{}
		for i := 0; i < len(m.queue) && i < 1000 && (m.initial == 0 || i < m.initial); i++ {
			k, _ := queueModelKey(m.queue[i].Object)
			if !queueModelIsBatchable(m.queue[i].Type) || (seen[k] && !clientGoV038) {
				break // v0.38 lets a batch repeat a key
			}
			seen[k] = true
			n = i + 1
		}
	}
	ds := append([]Delta(nil), m.queue[:n]...)
	m.queue = m.queue[n:]
	var err error
	if n == 1 {
		err = single(Deltas(ds), initial)
	} else {
		err = batch(ds, initial)
	}
	m.consume(n)
	return err
}

// deltaFIFOModel is a reference DeltaFIFO.
type deltaFIFOModel struct {
	queueModelSync
	known       *queueModelStore
	replaceType DeltaType
	transform   TransformFunc
	order       []string
	items       map[string]Deltas
}

func (m *deltaFIFOModel) add(key string, d Delta) {
	if _, ok := m.items[key]; !ok {
		m.order = append(m.order, key)
	}
	ds := append(m.items[key], d)
	if n := len(ds); n >= 2 && ds[n-1].Type == Deleted && ds[n-2].Type == Deleted {
		keep := ds[n-2]
		if _, tomb := keep.Object.(DeletedFinalStateUnknown); tomb {
			keep = ds[n-1]
		}
		ds = append(ds[:n-2], keep)
	}
	m.items[key] = ds
}

func (m *deltaFIFOModel) push(t DeltaType, obj interface{}, transform bool) error {
	k, err := queueModelKey(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	if _, tomb := obj.(DeletedFinalStateUnknown); transform && !tomb && m.transform != nil {
		obj, _ = m.transform(obj)
	}
	m.add(k, Delta{Type: t, Object: obj})
	return nil
}

func (m *deltaFIFOModel) Add(obj interface{}) error { m.populate(); return m.push(Added, obj, true) }
func (m *deltaFIFOModel) Update(obj interface{}) error {
	m.populate()
	return m.push(Updated, obj, true)
}

func (m *deltaFIFOModel) Delete(obj interface{}) error {
	k, err := queueModelKey(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	m.populate()
	if _, queued := m.items[k]; !queued {
		if m.known == nil {
			return nil
		}
		if _, known := m.known.objs[k]; !known {
			return nil
		}
	}
	return m.push(Deleted, obj, true)
}

func (m *deltaFIFOModel) Replace(list []interface{}, _ string) error {
	list = queueModelKeyed(list)
	listed := map[string]bool{}
	for _, o := range list {
		k, _ := queueModelKey(o)
		listed[k] = true
	}
	for _, o := range list {
		_ = m.push(m.replaceType, o, true)
	}
	deletions := 0
	for _, k := range append([]string(nil), m.order...) {
		if listed[k] {
			continue
		}
		last := m.items[k][len(m.items[k])-1].Object
		if t, ok := last.(DeletedFinalStateUnknown); ok {
			last = t.Obj
		}
		m.add(k, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: k, Obj: last}})
		deletions++
	}
	if m.known != nil {
		for _, k := range m.known.ListKeys() {
			if _, queued := m.items[k]; !listed[k] && !queued {
				m.add(k, Delta{Type: Deleted, Object: DeletedFinalStateUnknown{Key: k, Obj: m.known.objs[k]}})
				deletions++
			}
		}
	}
	m.first(len(listed) + deletions)
	return nil
}

func (m *deltaFIFOModel) Resync() error {
	if m.known == nil {
		return nil
	}
	for _, k := range m.known.ListKeys() {
		if _, queued := m.items[k]; !queued {
			_ = m.push(Sync, m.known.objs[k], false)
		}
	}
	return nil
}

func (m *deltaFIFOModel) Pop(process PopProcessFunc) (interface{}, error) {
	if len(m.order) == 0 {
		return nil, ErrFIFOClosed
	}
	initial := !m.synced
	k := m.order[0]
	m.order = m.order[1:]
	if m.initial > 0 {
		m.initial--
		m.check()
	}
	ds := m.items[k]
	delete(m.items, k)
	return ds, process(ds, initial)
}

// fifoModel is a reference FIFO, stale queue entries included.
type fifoModel struct {
	queueModelSync
	items map[string]interface{}
	queue []string
}

func (m *fifoModel) Add(obj interface{}) error {
	k, err := MetaNamespaceKeyFunc(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	m.populate()
	if _, ok := m.items[k]; !ok {
		m.queue = append(m.queue, k)
	}
	m.items[k] = obj
	return nil
}

func (m *fifoModel) Update(obj interface{}) error { return m.Add(obj) }

func (m *fifoModel) Delete(obj interface{}) error {
	k, err := MetaNamespaceKeyFunc(obj)
	if err != nil {
		return KeyError{Obj: obj, Err: err}
	}
	m.populate()
	delete(m.items, k)
	return nil
}

func (m *fifoModel) Replace(list []interface{}, _ string) error {
	items := map[string]interface{}{}
	var keys []string
	for _, o := range list {
		k, err := MetaNamespaceKeyFunc(o)
		if err != nil {
			return KeyError{Obj: o, Err: err}
		}
		if _, dup := items[k]; !dup {
			keys = append(keys, k)
		}
		items[k] = o
	}
	m.first(len(items))
	m.items, m.queue = items, keys
	return nil
}

func (m *fifoModel) Resync() error {
	var missing []string
	for k := range m.items {
		if !slices.Contains(m.queue, k) {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	m.queue = append(m.queue, missing...)
	return nil
}

func (m *fifoModel) Pop(process PopProcessFunc) (interface{}, error) {
	defer m.check()
	for len(m.queue) > 0 {
		initial := !m.synced
		k := m.queue[0]
		m.queue = m.queue[1:]
		if m.initial > 0 {
			m.initial--
		}
		obj, ok := m.items[k]
		if !ok {
			continue
		}
		delete(m.items, k)
		return obj, process(obj, initial)
	}
	return nil, ErrFIFOClosed
}

// queueHarnessTarget is what the harness drives: a queue, or a model of one.
type queueHarnessTarget interface {
	ReflectorStore
	Pop(PopProcessFunc) (interface{}, error)
	HasSynced() bool
}

// queueOp is one step of a random sequence.
type queueOp struct {
	kind string
	obj  interface{}
	list []interface{}
	rv   string
}

// queueGenOps produces a random sequence over a small key space, so keys
// collide, get deleted, relisted and resynced often.
func queueGenOps(rng *rand.Rand, n int) []queueOp {
	rv := 0
	pod := func() *v1.Pod {
		rv++
		return newTestPod(fmt.Sprint("ns", rng.Intn(2)), fmt.Sprint("p", rng.Intn(6)), fmt.Sprint(rv))
	}
	ops := make([]queueOp, 0, n)
	for len(ops) < n {
		switch r := rng.Intn(100); {
		case r < 18:
			ops = append(ops, queueOp{kind: "add", obj: pod()})
		case r < 30:
			ops = append(ops, queueOp{kind: "update", obj: pod()})
		case r < 38:
			ops = append(ops, queueOp{kind: "delete", obj: pod()})
		case r < 41:
			p := pod()
			ops = append(ops, queueOp{kind: "delete", obj: DeletedFinalStateUnknown{Key: p.Namespace + "/" + p.Name, Obj: p}})
		case r < 43:
			ops = append(ops, queueOp{kind: "add", obj: "not an object"})
		case r < 49:
			list := make([]interface{}, rng.Intn(8))
			for i := range list {
				list[i] = pod()
			}
			if rng.Intn(10) == 0 {
				// First in the list: client-go queues nothing and returns
				// the error; we leave the bad one out and queue the others,
				// a documented difference the client-go runs skip.
				list = append([]interface{}{42}, list...)
			}
			rv++
			ops = append(ops, queueOp{kind: "replace", list: list, rv: fmt.Sprint(rv)})
		case r < 53:
			ops = append(ops, queueOp{kind: "resync"})
		case r < 56:
			rv++
			ops = append(ops, queueOp{kind: "bookmark", rv: fmt.Sprint(rv)})
		case r < 80:
			ops = append(ops, queueOp{kind: "pop"})
		default:
			ops = append(ops, queueOp{kind: "popbatch"})
		}
	}
	return ops
}

// queueDescribe renders what a consumer sees, object contents included.
func queueDescribe(obj interface{}) string {
	switch o := obj.(type) {
	case nil:
		return "nil"
	case Deltas:
		return queueDescribe([]Delta(o))
	case []Delta:
		parts := make([]string, len(o))
		for i, d := range o {
			parts[i] = string(d.Type) + ":" + queueDescribe(d.Object)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case *v1.Pod:
		return fmt.Sprintf("%s/%s@%s%s", o.Namespace, o.Name, o.ResourceVersion, map[bool]string{true: "+t"}[o.Labels["t"] == "1"])
	case DeletedFinalStateUnknown:
		return "tomb(" + o.Key + "," + queueDescribe(o.Obj) + ")"
	case ReplacedAllInfo:
		return "all(" + o.ResourceVersion + "," + queueDescribe(o.Objects) + ")"
	case []interface{}:
		parts := make([]string, len(o))
		for i, x := range o {
			parts[i] = queueDescribe(x)
		}
		return strings.Join(parts, ",")
	case BookmarkInfo:
		return "bm(" + o.ResourceVersion + ")"
	case SyncAllInfo:
		return "syncall"
	}
	return fmt.Sprintf("%T:%v", obj, obj)
}

func queueErrString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// queueRun drives target through ops and returns one trace line per op: the
// result, what was popped (and whether it was initial), and HasSynced.
// store, if not nil, receives popped deltas like an informer's indexer.
func queueRun(target queueHarnessTarget, store *queueModelStore, ops []queueOp) []string {
	trace := make([]string, 0, len(ops))
	for _, op := range ops {
		trace = append(trace, queueStep(target, store, op)+fmt.Sprintf(" synced=%v", target.HasSynced()))
	}
	return trace
}

func queueStep(target queueHarnessTarget, store *queueModelStore, op queueOp) string {
	var popped string
	record := func(obj interface{}, initial bool) error {
		popped = fmt.Sprintf("%s initial=%v", queueDescribe(obj), initial)
		if ds, ok := obj.(Deltas); ok && store != nil {
			store.apply(ds)
		}
		return nil
	}
	switch op.kind {
	case "add":
		return "add " + queueErrString(target.Add(op.obj))
	case "update":
		return "update " + queueErrString(target.Update(op.obj))
	case "delete":
		return "delete " + queueErrString(target.Delete(op.obj))
	case "replace":
		return "replace " + queueErrString(target.Replace(op.list, op.rv))
	case "resync":
		return "resync " + queueErrString(target.Resync())
	case "bookmark":
		if b, ok := target.(ReflectorBookmarkStore); ok {
			return "bookmark " + queueErrString(b.Bookmark(op.rv))
		}
		return "bookmark n/a"
	case "popbatch":
		if b, ok := target.(interface {
			PopBatch(ProcessBatchFunc, PopProcessFunc) error
		}); ok {
			err := b.PopBatch(func(ds []Delta, initial bool) error {
				popped = fmt.Sprintf("batch %s initial=%v", queueDescribe(ds), initial)
				if store != nil {
					store.apply(ds)
				}
				return nil
			}, record)
			return "popbatch " + queueErrString(err) + " " + popped
		}
	}
	item, err := target.Pop(record)
	return fmt.Sprintf("pop %s %s returned=%s", queueErrString(err), popped, queueDescribe(item))
}

// queueConfig builds one queue configuration: ours, client-go's (nil if not
// compared) and the reference model, each with its own consumer store.
type queueConfig struct {
	name   string
	ours   func(store *queueModelStore) queueHarnessTarget
	theirs func(store *queueModelStore) queueHarnessTarget
	model  func(store *queueModelStore) queueHarnessTarget
	// noStore: the queue must not be given a store.
	noStore bool
}

func queueConfigs() []queueConfig {
	closed := func(q Queue) queueHarnessTarget { q.Close(); return q }
	atomic := func(transform TransformFunc, unlock bool) queueConfig {
		return queueConfig{
			name:    fmt.Sprintf("RealFIFO atomic transform=%v unlock=%v", transform != nil, unlock),
			noStore: true,
			ours: func(*queueModelStore) queueHarnessTarget {
				return closed(NewRealFIFOWithOptions(RealFIFOOptions{AtomicEvents: true, EmitDeltaTypeBookmark: true, UnlockWhileProcessing: unlock, Transformer: transform}))
			},
			theirs: func(*queueModelStore) queueHarnessTarget {
				return closed(clientcache.NewRealFIFOWithOptions(clientcache.RealFIFOOptions{AtomicEvents: true, EmitDeltaTypeBookmark: true, UnlockWhileProcessing: unlock, Transformer: transform}))
			},
			model: func(*queueModelStore) queueHarnessTarget {
				return &realFIFOModel{atomic: true, bookmarks: true, transform: transform}
			},
		}
	}
	return []queueConfig{
		atomic(nil, false),
		atomic(queueModelTransform, true),
		{
			name: "RealFIFO non-atomic with known objects",
			ours: func(s *queueModelStore) queueHarnessTarget {
				return closed(NewRealFIFOWithOptions(RealFIFOOptions{KnownObjects: s, Transformer: queueModelTransform}))
			},
			theirs: func(s *queueModelStore) queueHarnessTarget {
				return closed(clientcache.NewRealFIFOWithOptions(clientcache.RealFIFOOptions{KnownObjects: s, Transformer: queueModelTransform}))
			},
			model: func(s *queueModelStore) queueHarnessTarget {
				return &realFIFOModel{known: s, transform: queueModelTransform}
			},
		},
		{
			name: "DeltaFIFO with known objects, Replaced",
			ours: func(s *queueModelStore) queueHarnessTarget {
				return closed(NewDeltaFIFOWithOptions(DeltaFIFOOptions{KnownObjects: s, EmitDeltaTypeReplaced: true, Transformer: queueModelTransform}))
			},
			theirs: func(s *queueModelStore) queueHarnessTarget {
				return closed(clientcache.NewDeltaFIFOWithOptions(clientcache.DeltaFIFOOptions{KnownObjects: s, EmitDeltaTypeReplaced: true, Transformer: queueModelTransform}))
			},
			model: func(s *queueModelStore) queueHarnessTarget {
				return &deltaFIFOModel{known: s, replaceType: Replaced, transform: queueModelTransform, items: map[string]Deltas{}}
			},
		},
		{
			name:    "DeltaFIFO without known objects",
			noStore: true,
			ours: func(*queueModelStore) queueHarnessTarget {
				return closed(NewDeltaFIFO(MetaNamespaceKeyFunc, nil))
			},
			theirs: func(*queueModelStore) queueHarnessTarget {
				return closed(clientcache.NewDeltaFIFO(clientcache.MetaNamespaceKeyFunc, nil))
			},
			model: func(*queueModelStore) queueHarnessTarget {
				return &deltaFIFOModel{replaceType: Sync, items: map[string]Deltas{}}
			},
		},
		{
			name:    "FIFO",
			noStore: true,
			ours: func(*queueModelStore) queueHarnessTarget {
				return closed(NewFIFO(MetaNamespaceKeyFunc))
			},
			model: func(*queueModelStore) queueHarnessTarget {
				return &fifoModel{items: map[string]interface{}{}}
			},
		},
	}
}

// queueCompare runs ops through two targets and reports the first step
// where their traces differ.
func queueCompare(t *testing.T, cfg queueConfig, seed int64, a, b func(*queueModelStore) queueHarnessTarget, adapt func([]queueOp) []queueOp) {
	t.Helper()
	ops := queueGenOps(rand.New(rand.NewSource(seed)), 400)
	if adapt != nil {
		ops = adapt(ops)
	}
	// A final run of pops drains whatever is left.
	for i := 0; i < 60; i++ {
		ops = append(ops, queueOp{kind: "pop"})
	}
	storeA, storeB := newQueueModelStore(), newQueueModelStore()
	if cfg.noStore {
		storeA, storeB = nil, nil
	}
	ta, tb := queueRun(a(storeA), storeA, ops), queueRun(b(storeB), storeB, ops)
	for i := range ta {
		if ta[i] != tb[i] {
			t.Fatalf("seed %d step %d (%s):\n  ours:  %s\n  other: %s", seed, i, ops[i].kind, ta[i], tb[i])
		}
	}
}

// withoutKeylessRelistItems drops the objects without a key from every
// relist, where client-go fails the whole Replace and ours leaves them out.
func withoutKeylessRelistItems(ops []queueOp) []queueOp {
	for i, op := range ops {
		if op.kind == "replace" {
			ops[i].list = queueModelKeyed(op.list)
		}
	}
	return ops
}

func TestQueueModelRandomSequences(t *testing.T) {
	for _, cfg := range queueConfigs() {
		t.Run(cfg.name, func(t *testing.T) {
			for seed := int64(1); seed <= 20; seed++ {
				queueCompare(t, cfg, seed, cfg.ours, cfg.model, nil)
			}
		})
	}
}

func TestQueueDifferentialAgainstClientGo(t *testing.T) {
	for _, cfg := range queueConfigs() {
		if cfg.theirs == nil {
			continue
		}
		t.Run(cfg.name, func(t *testing.T) {
			for seed := int64(1); seed <= 20; seed++ {
				queueCompare(t, cfg, seed, cfg.ours, cfg.theirs, withoutKeylessRelistItems)
			}
		})
	}
}

func TestM4_HeapDifferentialAgainstClientGo(t *testing.T) {
	less := func(a, b interface{}) bool { return a.(heapTestItem).priority < b.(heapTestItem).priority }
	for seed := int64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewSource(seed))
		ours, theirs := NewHeap(heapTestKey, less), clientcache.NewHeap(heapTestKey, less)
		item := func() heapTestItem {
			// Few priorities, so ties are common and their order matters.
			return heapTestItem{name: fmt.Sprint("k", rng.Intn(12)), priority: rng.Intn(4)}
		}
		for step := 0; step < 300; step++ {
			var a, b string
			switch rng.Intn(6) {
			case 0:
				it := item()
				a, b = queueErrString(ours.Add(it)), queueErrString(theirs.Add(it))
			case 1:
				it := item()
				a, b = queueErrString(ours.AddIfNotPresent(it)), queueErrString(theirs.AddIfNotPresent(it))
			case 2:
				list := []interface{}{item(), item(), item()}
				a, b = queueErrString(ours.BulkAdd(list)), queueErrString(theirs.BulkAdd(list))
			case 3:
				it := item()
				a, b = queueErrString(ours.Delete(it)), queueErrString(theirs.Delete(it))
			default:
				if len(theirs.ListKeys()) == 0 {
					continue
				}
				x, errA := ours.Pop()
				y, errB := theirs.Pop()
				a, b = fmt.Sprint(x, errA), fmt.Sprint(y, errB)
			}
			require.Equal(t, b, a, "seed %d step %d", seed, step)
		}
		assert.ElementsMatch(t, theirs.ListKeys(), ours.ListKeys())
	}
}

func TestQueueKeyerRecognisesClientGoKeyFuncs(t *testing.T) {
	for name, fn := range map[string]KeyFunc{
		"ours":                         MetaNamespaceKeyFunc,
		"ours, deletion handling":      DeletionHandlingMetaNamespaceKeyFunc,
		"client-go":                    clientcache.MetaNamespaceKeyFunc,
		"client-go, deletion handling": clientcache.DeletionHandlingMetaNamespaceKeyFunc,
	} {
		assert.True(t, newQueueKeyer(fn).metaKeys, name)
	}
	assert.False(t, newQueueKeyer(func(interface{}) (string, error) { return "", nil }).metaKeys)
}
