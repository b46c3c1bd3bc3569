package cache

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/fanout"
)

// Tests of the write pipeline (internal/store/write.go), named after its
// rules, through the root's stores.

func TestChangeBuffersComeBackZeroed(t *testing.T) {
	pod := newTestPod("ns", "a", "1")
	c := getChangeBuffer()
	c.changes = append(c.changes, fanout.Notification{Kind: fanout.Add, New: pod})
	c.release()
	for range 10 { // the pool may hand back this buffer or a fresh one
		c = getChangeBuffer()
		assert.Empty(t, c.changes)
		for _, n := range c.changes[:cap(c.changes)] {
			assert.Zero(t, n, "no change pinned")
		}
		c.release()
	}
}

// A transaction that writes a key several times applies the last write
// only; what the store then holds, indexes and reports as its resource
// version is what client-go v0.37.2, which applies every write, ends with.
func TestTransactionLastWritePerKeyEndsAsClientGo(t *testing.T) {
	for _, boxed := range []bool{false, true} {
		t.Run(fmt.Sprint("boxed=", boxed), func(t *testing.T) {
			var opts []StoreOption
			if boxed {
				opts = append(opts, withStoredForm(newBoxForm()))
			}
			ours := NewIndexer(MetaNamespaceKeyFunc, storeModelIndexers(), opts...)
			theirs := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers(storeModelIndexers()))
			seed := []interface{}{newTestPod("ns", "a", "1", "app", "x"), newTestPod("ns", "b", "1", "app", "x")}
			for _, s := range []clientcache.Indexer{ours, theirs} {
				require.NoError(t, s.Replace(seed, "1"))
			}
			txns := []Transaction{
				{Type: TransactionTypeUpdate, Object: newTestPod("ns", "a", "2", "app", "y")},
				{Type: TransactionTypeDelete, Object: newTestPod("ns", "b", "2")},
				{Type: TransactionTypeAdd, Object: newTestPod("ns", "c", "3", "app", "y")},
				{Type: TransactionTypeUpdate, Object: newTestPod("ns", "a", "4", "app", "z")},
				{Type: TransactionTypeAdd, Object: newTestPod("ns", "b", "5", "app", "y", "tier", "t")},
				{Type: TransactionTypeDelete, Object: newTestPod("ns", "c", "6")},
				{Type: TransactionTypeUpdate, Object: newTestPod("ns", "a", "7", "app", "x")},
			}
			assert.Nil(t, ours.(TransactionStore).Transaction(txns...))
			assert.Nil(t, theirs.(clientcache.TransactionStore).Transaction(txns...))
			assertSameStoreContent(t, ours, theirs)
			assert.Equal(t, theirs.LastStoreSyncResourceVersion(), ours.LastStoreSyncResourceVersion())
			if boxed {
				form := ours.(*cache).form.(*boxForm)
				assert.Equal(t, []string{"ns/a", "ns/b"}, form.liveKeys(), "a key written then deleted in one transaction is dropped")
			}
		})
	}
}

// A transaction of more writes than writeLinkScan finds each key's last
// write with a map; the end state is still client-go's.
func TestLongTransactionLastWritePerKeyEndsAsClientGo(t *testing.T) {
	ours := NewIndexer(MetaNamespaceKeyFunc, storeModelIndexers(), withStoredForm(newBoxForm()))
	theirs := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers(storeModelIndexers()))
	var txns []Transaction
	for i := range 60 {
		name, rv, app := fmt.Sprint("p", i*7%9), fmt.Sprint(i+2), fmt.Sprint("a", i%4)
		typ := TransactionTypeUpdate
		if i%5 == 3 {
			typ = TransactionTypeDelete
		}
		txns = append(txns, Transaction{Type: typ, Object: newTestPod("ns", name, rv, "app", app)})
	}
	assert.Nil(t, ours.(TransactionStore).Transaction(txns...))
	assert.Nil(t, theirs.(clientcache.TransactionStore).Transaction(txns...))
	assertSameStoreContent(t, ours, theirs)
	assert.Equal(t, sortedStrings(theirs.ListKeys()), ours.(*cache).form.(*boxForm).liveKeys(), "every key deleted last is dropped")
}

// assertSameStoreContent compares keys, objects and every index.
func assertSameStoreContent(t *testing.T, ours, theirs clientcache.Indexer) {
	t.Helper()
	assert.ElementsMatch(t, theirs.ListKeys(), ours.ListKeys())
	assert.ElementsMatch(t, theirs.List(), ours.List())
	for name := range storeModelIndexers() {
		assert.ElementsMatch(t, theirs.ListIndexFuncValues(name), ours.ListIndexFuncValues(name), name)
		for _, v := range theirs.ListIndexFuncValues(name) {
			want, _ := theirs.IndexKeys(name, v)
			got, _ := ours.IndexKeys(name, v)
			assert.Equal(t, want, got, "%s=%s", name, v)
		}
	}
}

// A batch of deltas may hold several for one object, oldest first (client-go
// v0.38): each change's old object is the previous delta's, a delta after a
// delete is an add, and the store ends with the last.
func TestBatchSeveralDeltasForOneObject(t *testing.T) {
	for _, boxed := range []bool{false, true} {
		t.Run(fmt.Sprint("boxed=", boxed), func(t *testing.T) {
			a, h := newControllerTestApplier()
			if boxed {
				a.store = newCache(DeletionHandlingMetaNamespaceKeyFunc, Indexers{}, []StoreOption{withStoredForm(newBoxForm())})
				h.store = a.store
			}
			require.NoError(t, a.apply(Deltas{{Type: Added, Object: newTestPod("ns", "a", "1")}}, false))
			h.calls = nil
			require.NoError(t, a.processBatch([]Delta{
				{Type: Updated, Object: newTestPod("ns", "a", "2")},
				{Type: Added, Object: newTestPod("ns", "b", "2")},
				{Type: Updated, Object: newTestPod("ns", "a", "3")},
				{Type: Deleted, Object: newTestPod("ns", "b", "3")},
				{Type: Added, Object: newTestPod("ns", "b", "4")},
			}, false))
			assert.Equal(t, []string{
				"update ns/a@1->ns/a@2", "add ns/b@2", "update ns/a@2->ns/a@3", "delete ns/b@3 (still stored)", "add ns/b@4",
			}, h.calls, "callbacks run after the whole batch, so the store reflects its last delta")
			got, _, _ := a.store.GetByKey("ns/a")
			assert.Equal(t, "3", got.(interface{ GetResourceVersion() string }).GetResourceVersion())
			got, _, _ = a.store.GetByKey("ns/b")
			assert.Equal(t, "4", got.(interface{ GetResourceVersion() string }).GetResourceVersion())
		})
	}
}

// collidingPods are namespace x's "a/b" and namespace x/a's "b": both have
// the key x/a/b.
func collidingPods() (a, b *v1.Pod) {
	return newTestPod("x", "a/b", "1"), newTestPod("x/a", "b", "2")
}

func collisionStore(t *testing.T) (Indexer, *objectErrorProvider) {
	p := &objectErrorProvider{}
	return NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, WithStoreMetrics(storeReservedID(t), p)), p
}

// Two objects of different names under one key: the store keeps the later,
// as client-go's does, and reports and counts it with the key and both
// names, whichever way it is written.
func TestKeyCollisionReportedAndCounted(t *testing.T) {
	a, b := collidingPods()
	const want = "Object written over one of another name under the same key; the store keeps the later: two objects of different names have the same key [key x/a/b droppedNamespace x droppedName a/b keptNamespace x/a keptName b]"
	for name, write := range map[string]func(s Indexer) error{
		"Update": func(s Indexer) error { return s.Update(b) },
		"Transaction": func(s Indexer) error {
			if err := s.(TransactionStore).Transaction(Transaction{Type: TransactionTypeUpdate, Object: b}); err != nil {
				return err
			}
			return nil
		},
		"batch of deltas": func(s Indexer) error {
			_, _, err := s.(*cache).applyDeltas([]Delta{{Type: Updated, Object: b}}, false, nil, nil)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, p := collisionStore(t)
			require.NoError(t, s.Add(a))
			reported := captureReportedErrors(t)
			require.NoError(t, write(s))
			assert.Equal(t, []string{want}, reported.take())
			assert.Equal(t, 1, p.errors.count())
			theirs := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
			require.NoError(t, theirs.Add(a))
			require.NoError(t, theirs.Update(b))
			assert.Equal(t, theirs.List(), s.List(), "client-go's outcome")
			nsKeys, _ := s.IndexKeys(NamespaceIndex, "x/a")
			assert.Equal(t, []string{"x/a/b"}, nsKeys)
			nsKeys, _ = s.IndexKeys(NamespaceIndex, "x")
			assert.Empty(t, nsKeys)
		})
	}
	t.Run("within one batch", func(t *testing.T) {
		s, p := collisionStore(t)
		reported := captureReportedErrors(t)
		_, _, err := s.(*cache).applyDeltas([]Delta{{Type: Added, Object: a}, {Type: Added, Object: b}}, false, nil, nil)
		require.NoError(t, err)
		assert.Equal(t, []string{want}, reported.take())
		assert.Equal(t, 1, p.errors.count())
	})
	t.Run("delete", func(t *testing.T) {
		s, p := collisionStore(t)
		require.NoError(t, s.Add(a))
		reported := captureReportedErrors(t)
		require.NoError(t, s.Delete(b))
		assert.Len(t, reported.take(), 1)
		assert.Equal(t, 1, p.errors.count())
		assert.Empty(t, s.ListKeys(), "client-go's outcome: the key is gone")
	})
	t.Run("the same object again is no collision", func(t *testing.T) {
		s, p := collisionStore(t)
		reported := captureReportedErrors(t)
		require.NoError(t, s.Add(a))
		require.NoError(t, s.Update(newTestPod("x", "a/b", "3")))
		require.NoError(t, s.Delete(a))
		assert.Empty(t, reported.take())
		assert.Zero(t, p.errors.count())
	})
	t.Run("a key function not by name shares keys on purpose", func(t *testing.T) {
		byLabel := NewStore(func(obj interface{}) (string, error) { return obj.(*v1.Pod).Labels["app"], nil })
		reported := captureReportedErrors(t)
		require.NoError(t, byLabel.Add(newTestPod("ns", "a", "1", "app", "x")))
		require.NoError(t, byLabel.Add(newTestPod("ns", "b", "1", "app", "x")))
		assert.Empty(t, reported.take())
	})
}

// A list that holds one key twice: the later object is kept, as by
// client-go, and each repeat is reported and counted, names and all.
func TestReplaceListingAKeyTwiceReportedAndCounted(t *testing.T) {
	a, b := collidingPods()
	s, p := collisionStore(t)
	reported := captureReportedErrors(t)
	again := newTestPod("ns", "c", "5")
	list := []interface{}{a, newTestPod("ns", "c", "4"), b, again}
	require.NoError(t, s.Replace(list, "9"))
	assert.Equal(t, []string{
		"Object listed twice under one key; the store keeps the later: a list holds two objects with the same key [key ns/c droppedNamespace ns droppedName c keptNamespace ns keptName c]",
		"Object listed twice under one key; the store keeps the later: a list holds two objects with the same key [key x/a/b droppedNamespace x droppedName a/b keptNamespace x/a keptName b]",
	}, reported.take())
	assert.Equal(t, 2, p.errors.count())
	theirs := clientcache.NewStore(clientcache.MetaNamespaceKeyFunc)
	require.NoError(t, theirs.Replace(list, "9"))
	assert.ElementsMatch(t, theirs.List(), s.List(), "client-go's outcome")
}
