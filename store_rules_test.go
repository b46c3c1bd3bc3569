package cache

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/features"
	clientcache "k8s.io/client-go/tools/cache"
)

// storeGauge records the last value set.
type storeGauge struct{ last float64 }

func (g *storeGauge) Set(v float64) { g.last = v }
func (*storeGauge) Inc()            {}
func (*storeGauge) Dec()            {}

// storeMetricsProvider hands out one resource-version gauge.
type storeMetricsProvider struct {
	noopInformerMetricsProvider
	rv storeGauge
}

func (p *storeMetricsProvider) NewStoreResourceVersionMetric(InformerNameAndResource) GaugeMetric {
	return &p.rv
}

func storeReservedID(t *testing.T) InformerNameAndResource {
	t.Cleanup(ResetInformerNamesForTesting)
	name, err := NewInformerName("store-test-" + t.Name())
	require.NoError(t, err)
	return name.WithResource(schema.GroupVersionResource{Resource: "pods"})
}

// storeAtomicFIFO sets the AtomicFIFO gate for the test.
type storeGates map[features.Feature]bool

func (g storeGates) Enabled(f features.Feature) bool { return g[f] }

func storeWithAtomicFIFO(t *testing.T, on bool) {
	old := features.FeatureGates()
	features.ReplaceFeatureGates(storeGates{features.AtomicFIFO: on})
	t.Cleanup(func() { features.ReplaceFeatureGates(old) })
}

func storeSortedKeys(s Store) []string {
	keys := s.ListKeys()
	sort.Strings(keys)
	return keys
}

func storeLabelIndex(label string) IndexFunc {
	return func(obj interface{}) ([]string, error) {
		if v, ok := obj.(*v1.Pod).Labels[label]; ok {
			return []string{v}, nil
		}
		return nil, nil
	}
}

func TestS1_ConstructorsAndOptions(t *testing.T) {
	s := formStore(MetaNamespaceKeyFunc)
	require.NoError(t, s.Add(newTestPod("ns", "a", "1")))
	assert.Equal(t, []string{"ns/a"}, s.ListKeys())

	idx := formIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	require.NoError(t, idx.Add(newTestPod("ns", "a", "1")))
	keys, err := idx.IndexKeys(NamespaceIndex, "ns")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a"}, keys)

	p := &storeMetricsProvider{}
	s = formStore(MetaNamespaceKeyFunc, WithStoreMetrics(storeReservedID(t), p))
	require.NoError(t, s.Add(newTestPod("ns", "a", "1234")))
	assert.Equal(t, 1234.0, p.rv.last)

	unreserved := &storeMetricsProvider{}
	s = formStore(MetaNamespaceKeyFunc, WithStoreMetrics(InformerNameAndResource{}, unreserved))
	require.NoError(t, s.Add(newTestPod("ns", "a", "99")))
	assert.Zero(t, unreserved.rv.last, "unreserved identities publish nothing")
}

func TestS2_AddUpdateKeyTransformAndOverwrite(t *testing.T) {
	var transformed int
	s := formIndexer(MetaNamespaceKeyFunc, Indexers{"app": storeLabelIndex("app")}, WithTransformer(func(obj interface{}) (interface{}, error) {
		transformed++
		if obj.(*v1.Pod).Labels["fail"] == "yes" {
			return nil, errors.New("no")
		}
		return obj, nil
	}))
	err := s.Add(42)
	var keyErr KeyError
	require.ErrorAs(t, err, &keyErr)
	assert.Equal(t, 0, transformed, "the key is computed before the transformer runs")
	assert.Empty(t, s.List())

	err = s.Add(newTestPod("ns", "a", "1", "fail", "yes"))
	require.EqualError(t, err, "transforming: no")
	assert.Empty(t, s.List())

	a1 := newTestPod("ns", "a", "1", "app", "x")
	require.NoError(t, s.Update(a1), "Update of a missing key inserts")
	a2 := newTestPod("ns", "a", "2", "app", "y")
	require.NoError(t, s.Add(a2), "Add of an existing key overwrites")
	got, ok, err := s.GetByKey("ns/a")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Same(t, a2, got)
	keys, _ := s.IndexKeys("app", "x")
	assert.Empty(t, keys)
	keys, _ = s.IndexKeys("app", "y")
	assert.Equal(t, []string{"ns/a"}, keys)
}

func TestS3_Delete(t *testing.T) {
	transformed := 0
	s := formStore(MetaNamespaceKeyFunc, WithTransformer(func(obj interface{}) (interface{}, error) {
		transformed++
		return obj, nil
	}))
	var keyErr KeyError
	require.ErrorAs(t, s.Delete(42), &keyErr)
	require.NoError(t, s.Delete(newTestPod("ns", "absent", "1")), "absent keys are a no-op")
	require.NoError(t, s.Add(newTestPod("ns", "a", "1")))
	require.NoError(t, s.Delete(newTestPod("ns", "a", "2")))
	assert.Empty(t, s.List())
	assert.Equal(t, 1, transformed, "Delete does not transform")
}

func TestS4_GetAndListReturnStoredPointers(t *testing.T) {
	s := formStore(MetaNamespaceKeyFunc)
	p := newTestPod("ns", "a", "1")
	require.NoError(t, s.Add(p))
	_, _, err := s.Get(42)
	var keyErr KeyError
	require.ErrorAs(t, err, &keyErr)
	got, ok, err := s.Get(newTestPod("ns", "a", "other"))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Same(t, p, got)
	_, ok, err = s.GetByKey("no/such")
	require.NoError(t, err)
	assert.False(t, ok)
	require.Len(t, s.List(), 1)
	assert.Same(t, p, s.List()[0])
}

func TestS5_Replace(t *testing.T) {
	s := formIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	require.NoError(t, s.Add(newTestPod("old", "a", "1")))

	var keyErr KeyError
	require.ErrorAs(t, s.Replace([]interface{}{newTestPod("ns", "b", "2"), 42}, "9"), &keyErr)
	assert.Equal(t, 42, keyErr.Obj)
	assert.Equal(t, []string{"ns/b"}, storeSortedKeys(s), "an object without a key costs no other object")

	first, last := newTestPod("ns", "b", "2"), newTestPod("ns", "b", "3")
	require.NoError(t, s.Replace([]interface{}{first, newTestPod("ns", "c", "2"), last}, ""))
	assert.Equal(t, []string{"ns/b", "ns/c"}, storeSortedKeys(s))
	got, _, _ := s.GetByKey("ns/b")
	assert.Same(t, last, got, "the last of duplicate keys wins")
	assert.Equal(t, "", s.LastStoreSyncResourceVersion(), "an empty resource version is recorded too")
	assert.Equal(t, []string{"ns"}, s.ListIndexFuncValues(NamespaceIndex))

	tr := formStore(MetaNamespaceKeyFunc, WithTransformer(func(interface{}) (interface{}, error) { return nil, errors.New("no") }))
	require.EqualError(t, tr.Replace([]interface{}{newTestPod("ns", "b", "2")}, "1"), "transforming: no")
}

func TestS6_ResyncIsANoOp(t *testing.T) {
	s := formStore(MetaNamespaceKeyFunc)
	require.NoError(t, s.Add(newTestPod("ns", "a", "1")))
	require.NoError(t, s.Resync())
	assert.Len(t, s.List(), 1)
	assert.NoError(t, formThreadSafeStore(nil, nil).Resync())
}

func TestS7_StoreResourceVersion(t *testing.T) {
	storeWithAtomicFIFO(t, true)
	s := formStore(DeletionHandlingMetaNamespaceKeyFunc)
	require.NoError(t, s.Add(newTestPod("ns", "a", "10")))
	require.NoError(t, s.Update(newTestPod("ns", "b", "5")))
	assert.Equal(t, "5", s.LastStoreSyncResourceVersion(), "last write wins, not max")
	require.NoError(t, s.Add(newTestPod("ns", "c", "")))
	assert.Equal(t, "", s.LastStoreSyncResourceVersion())
	require.NoError(t, s.Add(newTestPod("ns", "d", "7")))

	require.NoError(t, s.Delete(DeletedFinalStateUnknown{Key: "ns/d", Obj: newTestPod("ns", "d", "8")}))
	assert.Equal(t, "7", s.LastStoreSyncResourceVersion(), "tombstone deletes do not record")
	require.NoError(t, s.Delete(newTestPod("ns", "absent", "11")))
	assert.Equal(t, "11", s.LastStoreSyncResourceVersion(), "a meta delete records even if absent")

	ts := formThreadSafeStore(nil, nil)
	ts.Add("x", newTestPod("ns", "x", "3"))
	ts.Add("raw", "not a meta object")
	assert.Equal(t, "3", ts.LastStoreSyncResourceVersion(), "non-meta objects do not record")
	ts.Delete("x")
	assert.Equal(t, "3", ts.LastStoreSyncResourceVersion(), "Delete(key) does not record")
	ts.Bookmark("40")
	assert.Equal(t, "40", ts.LastStoreSyncResourceVersion())
	ts.Replace(map[string]interface{}{}, "41")
	assert.Equal(t, "41", ts.LastStoreSyncResourceVersion())

	storeWithAtomicFIFO(t, false)
	assert.Equal(t, "", ts.LastStoreSyncResourceVersion(), "AtomicFIFO off hides the version")
}

// storeFlakyIndex fails on pods labelled bad=yes, or on every pod once
// failAll is set.
type storeFlakyIndex struct{ failAll bool }

func (f *storeFlakyIndex) fn(obj interface{}) ([]string, error) {
	p := obj.(*v1.Pod)
	if f.failAll || p.Labels["bad"] == "yes" {
		return nil, fmt.Errorf("cannot index %s", p.Name)
	}
	return []string{p.Labels["app"]}, nil
}

// storeState is everything a reader can observe, for before/after checks.
func storeState(s Indexer) string {
	out := fmt.Sprint(storeSortedKeys(s))
	names := []string{}
	for name := range s.GetIndexers() {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		vals := s.ListIndexFuncValues(name)
		sort.Strings(vals)
		for _, v := range vals {
			keys, _ := s.IndexKeys(name, v)
			out += fmt.Sprintf(" %s=%s:%v", name, v, keys)
		}
	}
	return out
}

func TestS8_IndexFuncErrorLeavesObjectOutOfThatIndexOnly(t *testing.T) {
	reported := captureReportedErrors(t)
	flaky := &storeFlakyIndex{}
	s := formIndexer(MetaNamespaceKeyFunc, Indexers{"app": flaky.fn, NamespaceIndex: MetaNamespaceIndexFunc})
	require.NoError(t, s.Add(newTestPod("ns", "a", "1", "app", "x")))
	require.NoError(t, s.Add(newTestPod("ns", "b", "1", "app", "x")))
	assert.Equal(t, "[ns/a ns/b] app=x:[ns/a ns/b] namespace=ns:[ns/a ns/b]", storeState(s))

	require.NoError(t, s.Add(newTestPod("ns", "c", "2", "bad", "yes")))
	assert.Equal(t, "[ns/a ns/b ns/c] app=x:[ns/a ns/b] namespace=ns:[ns/a ns/b ns/c]", storeState(s))
	assert.Equal(t, []string{`Object stored but left out of an index: cannot index c [key ns/c index app]`}, reported.take())

	require.NoError(t, s.Update(newTestPod("ns", "a", "2", "bad", "yes")))
	assert.Equal(t, "[ns/a ns/b ns/c] app=x:[ns/b] namespace=ns:[ns/a ns/b ns/c]", storeState(s))
	assert.Equal(t, []string{`Object stored but left out of an index: cannot index a [key ns/a index app]`}, reported.take())

	require.NoError(t, s.Replace([]interface{}{newTestPod("ns", "z", "2", "bad", "yes"), newTestPod("ns", "a", "3", "app", "x")}, "5"))
	assert.Equal(t, "[ns/a ns/z] app=x:[ns/a] namespace=ns:[ns/a ns/z]", storeState(s))
	assert.Equal(t, []string{`Object stored but left out of an index: cannot index z [key ns/z index app]`}, reported.take())
	require.NoError(t, s.Replace([]interface{}{newTestPod("ns", "a", "1", "app", "x"), newTestPod("ns", "b", "1", "app", "x")}, "6"))
	before := storeState(s)

	require.Error(t, s.AddIndexers(Indexers{"strict": func(interface{}) ([]string, error) { return nil, errors.New("never") }}),
		"adding an index is all or nothing")
	assert.Equal(t, before, storeState(s))
	assert.Len(t, s.GetIndexers(), 2)

	flaky.failAll = true
	require.NoError(t, s.Delete(newTestPod("ns", "a", "3")), "a delete never fails on the old object's index values")
	flaky.failAll = false
	keys, _ := s.IndexKeys("app", "x")
	assert.Equal(t, []string{"ns/b"}, keys)

	require.NoError(t, s.Update(newTestPod("ns", "b", "4", "app", "y")))
	assert.Equal(t, []string{"ns", "y"}, append(s.ListIndexFuncValues(NamespaceIndex), s.ListIndexFuncValues("app")...),
		"emptied values are not listed")
}

func TestS8_ClientGoNamespaceIndexFuncIndexesLikeOurs(t *testing.T) {
	// Both take the in-place namespace path (internal/store's
	// TestNamespaceIndexTakesTheNamespacePath).
	require.True(t, isMetaNamespaceIndexFunc(clientcache.MetaNamespaceIndexFunc) && isMetaNamespaceIndexFunc(MetaNamespaceIndexFunc))
	byString := func(obj interface{}) (string, error) {
		if s, ok := obj.(string); ok {
			return s, nil
		}
		return MetaNamespaceKeyFunc(obj)
	}
	theirs := formIndexer(byString, Indexers{NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
	ours := formIndexer(byString, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	for _, s := range []Indexer{theirs, ours} {
		require.NoError(t, s.Add(newTestPod("ns1", "a", "1")))
		require.NoError(t, s.Add(newTestPod("ns2", "b", "1")))
		require.NoError(t, s.Update(newTestPod("ns1", "b", "2")))
		keys, err := s.IndexKeys(NamespaceIndex, "ns1")
		require.NoError(t, err)
		assert.Equal(t, []string{"ns1/a", "ns1/b"}, keys)
	}
	_, fnErr := clientcache.MetaNamespaceIndexFunc("no meta")
	reported := captureReportedErrors(t)
	require.NoError(t, theirs.Add("no meta"))
	assert.Equal(t, []string{fmt.Sprintf("Object stored but left out of an index: %v [key no meta index %s]", fnErr, NamespaceIndex)}, reported.take(),
		"the error is the index function's own, as without the fast path")
	assert.Equal(t, []string{"no meta", "ns1/a", "ns1/b", "ns2/b"}, storeSortedKeys(theirs))
	assert.Equal(t, []string{"ns1", "ns2"}, sortedStrings(theirs.ListIndexFuncValues(NamespaceIndex)))
}

func TestS9_Index(t *testing.T) {
	multi := func(obj interface{}) ([]string, error) {
		p := obj.(*v1.Pod)
		return []string{p.Labels["a"], p.Labels["b"]}, nil
	}
	s := formIndexer(MetaNamespaceKeyFunc, Indexers{"multi": multi, NamespaceIndex: MetaNamespaceIndexFunc})
	_, err := s.Index("nope", newTestPod("ns", "a", "1"))
	require.EqualError(t, err, "Index with name nope does not exist")
	_, err = s.Index(NamespaceIndex, 42)
	require.ErrorContains(t, err, "object has no meta")

	require.NoError(t, s.Add(newTestPod("ns", "p1", "1", "a", "1", "b", "2")))
	require.NoError(t, s.Add(newTestPod("ns", "p2", "1", "a", "2", "b", "3")))
	require.NoError(t, s.Add(newTestPod("ns", "p3", "1", "a", "9", "b", "9")))
	objs, err := s.Index("multi", newTestPod("", "q", "1", "a", "2", "b", "3"))
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/p1", "ns/p2"}, storeModelKeysOf(objs), "shared values are deduplicated")

	none := formIndexer(MetaNamespaceKeyFunc, Indexers{"none": func(interface{}) ([]string, error) { return nil, nil }})
	objs, err = none.Index("none", newTestPod("ns", "a", "1"))
	require.NoError(t, err)
	assert.NotNil(t, objs)
	assert.Empty(t, objs)
}

func TestS10_ByIndexAndIndexKeys(t *testing.T) {
	s := formIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	_, err := s.ByIndex("nope", "x")
	require.EqualError(t, err, "Index with name nope does not exist")
	_, err = s.IndexKeys("nope", "x")
	require.EqualError(t, err, "Index with name nope does not exist")
	for _, name := range []string{"c", "a", "b"} {
		require.NoError(t, s.Add(newTestPod("ns", name, "1")))
	}
	keys, err := s.IndexKeys(NamespaceIndex, "ns")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a", "ns/b", "ns/c"}, keys)
	objs, err := s.ByIndex(NamespaceIndex, "ns")
	require.NoError(t, err)
	assert.Len(t, objs, 3)
	objs, err = s.ByIndex(NamespaceIndex, "other")
	require.NoError(t, err)
	assert.Empty(t, objs)
	keys, err = s.IndexKeys(NamespaceIndex, "other")
	require.NoError(t, err)
	assert.Empty(t, keys)
}

func TestS11_ListIndexFuncValuesOfUnknownIndex(t *testing.T) {
	s := formIndexer(MetaNamespaceKeyFunc, nil)
	assert.Empty(t, s.ListIndexFuncValues("nope"))
}

func TestS12_GetIndexers(t *testing.T) {
	s := formIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	got := s.GetIndexers()
	require.Len(t, got, 1)
	assert.NotNil(t, got[NamespaceIndex])
	require.NoError(t, s.AddIndexers(Indexers{"app": storeLabelIndex("app")}))
	assert.Len(t, s.GetIndexers(), 2)
	assert.Len(t, got, 1, "a map handed out earlier is never changed")
}

func TestS13_AddIndexers(t *testing.T) {
	s := formIndexer(MetaNamespaceKeyFunc, nil)
	require.NoError(t, s.Add(newTestPod("ns", "a", "1", "app", "x")))
	require.NoError(t, s.AddIndexers(Indexers{"app": storeLabelIndex("app")}), "works on a store built with nil Indexers")
	keys, err := s.IndexKeys("app", "x")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a"}, keys, "existing items are indexed at once")

	err = s.AddIndexers(Indexers{"app": storeLabelIndex("app"), "other": storeLabelIndex("o")})
	require.EqualError(t, err, "indexer conflict: map[app:{}]")
	assert.Len(t, s.GetIndexers(), 1, "nothing is added on conflict")
}

func TestS14_StoreTransaction(t *testing.T) {
	transformed := 0
	s := formStore(MetaNamespaceKeyFunc, WithTransformer(func(obj interface{}) (interface{}, error) {
		transformed++
		return obj, nil
	}))
	ts := s.(TransactionStore)
	require.NoError(t, s.Add(newTestPod("ns", "gone", "1")))
	transformed = 0
	require.Nil(t, ts.Transaction(
		Transaction{Object: newTestPod("ns", "a", "2"), Type: TransactionTypeAdd},
		Transaction{Object: newTestPod("ns", "a", "3"), Type: TransactionTypeUpdate},
		Transaction{Object: newTestPod("ns", "gone", "4"), Type: TransactionTypeDelete},
	))
	assert.Equal(t, []string{"ns/a"}, storeSortedKeys(s))
	assert.Zero(t, transformed, "transactions are not transformed")

	txErr := ts.Transaction(
		Transaction{Object: 42, Type: TransactionTypeAdd},
		Transaction{Object: newTestPod("ns", "b", "5"), Type: TransactionTypeAdd},
		Transaction{Object: "nope", Type: TransactionTypeDelete},
	)
	require.NotNil(t, txErr)
	assert.Equal(t, []int{1}, txErr.SuccessfulIndices)
	assert.Equal(t, 3, txErr.TotalTransactions)
	require.Len(t, txErr.Errors, 2)
	assert.Contains(t, txErr.Error(), "failed to execute (2/3) transactions failed due to: [couldn't create key for object 42")
	assert.Equal(t, []string{"ns/a", "ns/b"}, storeSortedKeys(s))
}

func TestS15_ThreadSafeStoreTransactionVersion(t *testing.T) {
	storeWithAtomicFIFO(t, true)
	ts := formThreadSafeStore(nil, nil).(ThreadSafeStoreWithTransaction)
	ts.Bookmark("1")
	ts.Transaction()
	assert.Equal(t, "1", ts.LastStoreSyncResourceVersion(), "an empty transaction is a no-op")
	ts.Transaction(
		ThreadSafeStoreTransaction{Transaction: Transaction{Object: newTestPod("ns", "a", "9"), Type: TransactionTypeAdd}, Key: "ns/a"},
		ThreadSafeStoreTransaction{Transaction: Transaction{Object: newTestPod("ns", "b", "5"), Type: TransactionTypeAdd}, Key: "ns/b"},
	)
	assert.Equal(t, "5", ts.LastStoreSyncResourceVersion(), "taken from the last transaction only")
	ts.Transaction(ThreadSafeStoreTransaction{Transaction: Transaction{Object: "raw", Type: TransactionTypeAdd}, Key: "raw"})
	assert.Equal(t, "5", ts.LastStoreSyncResourceVersion(), "a non-meta last object records nothing")
	assert.Len(t, ts.List(), 3)
}

func TestS16_ThreadSafeStore(t *testing.T) {
	storeWithAtomicFIFO(t, true)
	p := &storeMetricsProvider{}
	ts := formThreadSafeStore(Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, Indices{}, WithThreadSafeStoreMetrics(storeReservedID(t), p))
	a := newTestPod("ns", "a", "1234567890123456789")
	ts.Add("ns/a", a)
	assert.Equal(t, float64(567890123456789), p.rv.last, "the metric is the last 15 digits")
	ts.Update("ns/b", newTestPod("ns", "b", "x"))
	assert.Equal(t, float64(567890123456789), p.rv.last, "an unparsable version leaves the metric")
	assert.Equal(t, "x", ts.LastStoreSyncResourceVersion())
	got, ok := ts.Get("ns/a")
	require.True(t, ok)
	assert.Same(t, a, got)
	keys := ts.ListKeys()
	sort.Strings(keys)
	assert.Equal(t, []string{"ns/a", "ns/b"}, keys)
	assert.Len(t, ts.List(), 2)
	objs, err := ts.Index(NamespaceIndex, a)
	require.NoError(t, err)
	assert.Len(t, objs, 2)
	ts.DeleteWithObject("ns/b", newTestPod("ns", "b", "77"))
	assert.Equal(t, "77", ts.LastStoreSyncResourceVersion())
	assert.Equal(t, 77.0, p.rv.last)
	ts.Replace(map[string]interface{}{"k": newTestPod("other", "k", "1")}, "100")
	assert.Equal(t, []string{"other"}, ts.ListIndexFuncValues(NamespaceIndex))
	assert.Equal(t, []string{"k"}, ts.ListKeys())
	assert.NoError(t, ts.AddIndexers(Indexers{"x": MetaNamespaceIndexFunc}))
	assert.Len(t, ts.GetIndexers(), 2)
}

func TestStoreRejectsNilObjects(t *testing.T) {
	s := formStore(func(interface{}) (string, error) { return "k", nil })
	var keyErr KeyError
	require.ErrorAs(t, s.Add(nil), &keyErr)
	require.ErrorAs(t, s.Update((*v1.Pod)(nil)), &keyErr)
	require.ErrorAs(t, s.Delete(nil), &keyErr)
	_, _, err := s.Get((*v1.Pod)(nil))
	require.ErrorAs(t, err, &keyErr)
	require.ErrorAs(t, s.Replace([]interface{}{nil}, "1"), &keyErr)
	assert.Empty(t, s.List())
}

func TestTypedIndexerFuncRejectsWrongTypes(t *testing.T) {
	idx := TypedIndexersToIndexers(TypedIndexers[*v1.Pod]{"name": func(p *v1.Pod) ([]string, error) { return []string{p.Name}, nil }})
	vals, err := idx["name"](newTestPod("ns", "a", "1"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, vals)
	_, err = idx["name"](&v1.Service{})
	require.EqualError(t, err, "index function expects *v1.Pod, got *v1.Service")
	s := formIndexer(MetaNamespaceKeyFunc, idx)
	reported := captureReportedErrors(t)
	require.NoError(t, s.Add(&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc"}}))
	assert.Equal(t, []string{"Object stored but left out of an index: index function expects *v1.Pod, got *v1.Service [key svc index name]"}, reported.take())
	assert.Len(t, s.List(), 1)
	assert.Empty(t, s.ListIndexFuncValues("name"))
}

func TestM1_Listers(t *testing.T) {
	s := formIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	for _, p := range []*v1.Pod{
		newTestPod("a", "p1", "1", "app", "x"), newTestPod("a", "p2", "1", "app", "y"), newTestPod("b", "p3", "1", "app", "x"),
	} {
		require.NoError(t, s.Add(p))
	}
	collect := func(fn func(AppendFunc) error) []string {
		var out []interface{}
		require.NoError(t, fn(func(obj interface{}) { out = append(out, obj) }))
		return storeModelKeysOf(out)
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "x"})
	assert.Empty(t, collect(func(f AppendFunc) error { return ListAll(s, labels.Nothing(), f) }))
	assert.Len(t, collect(func(f AppendFunc) error { return ListAll(s, labels.Everything(), f) }), 3)
	assert.Equal(t, []string{"a/p1", "b/p3"}, collect(func(f AppendFunc) error { return ListAll(s, sel, f) }))
	assert.Equal(t, []string{"a/p1"}, collect(func(f AppendFunc) error { return ListAllByNamespace(s, "a", sel, f) }))
	assert.Len(t, collect(func(f AppendFunc) error { return ListAllByNamespace(s, "", labels.Everything(), f) }), 3)

	noIndex := formStore(MetaNamespaceKeyFunc)
	for _, obj := range s.List() {
		require.NoError(t, noIndex.Add(obj))
	}
	scanning := formIndexer(MetaNamespaceKeyFunc, nil)
	require.NoError(t, scanning.Replace(noIndex.List(), "1"))
	assert.Equal(t, []string{"a/p1", "a/p2"}, collect(func(f AppendFunc) error {
		return ListAllByNamespace(scanning, "a", labels.Everything(), f)
	}), "without the namespace index every object is scanned")

	raw := formStore(func(interface{}) (string, error) { return "raw", nil })
	require.NoError(t, raw.Add("not meta"))
	require.Error(t, ListAll(raw, sel, func(interface{}) {}))
	require.NoError(t, ListAll(raw, labels.Everything(), func(interface{}) {}))

	gr := schema.GroupResource{Resource: "pods"}
	l := NewGenericLister(s, gr)
	all, err := l.List(labels.Everything())
	require.NoError(t, err)
	assert.Len(t, all, 3)
	none, err := NewGenericLister(formIndexer(MetaNamespaceKeyFunc, nil), gr).List(labels.Everything())
	require.NoError(t, err)
	assert.Nil(t, none)
	obj, err := l.Get("a/p1")
	require.NoError(t, err)
	assert.Equal(t, "p1", obj.(*v1.Pod).Name)
	_, err = l.Get("p1")
	assert.True(t, apierrors.IsNotFound(err))
	obj, err = l.ByNamespace("b").Get("p3")
	require.NoError(t, err)
	assert.Equal(t, "p3", obj.(*v1.Pod).Name)
	_, err = l.ByNamespace("b").Get("p1")
	assert.Equal(t, apierrors.NewNotFound(gr, "p1"), err)
	inA, err := l.ByNamespace("a").List(sel)
	require.NoError(t, err)
	assert.Equal(t, []runtime.Object{obj.(*v1.Pod)}[:0], inA[:0])
	assert.Len(t, inA, 1)

	_, err = NewGenericLister(raw.(Indexer), gr).Get("raw")
	require.EqualError(t, err, "stored object of type string is not a runtime.Object")
}

func TestS8_ThreadSafeStoreStoresUnindexableObjects(t *testing.T) {
	reported := captureReportedErrors(t)
	flaky := &storeFlakyIndex{}
	ts := formThreadSafeStore(Indexers{"app": flaky.fn}, nil)
	ts.Add("ns/a", newTestPod("ns", "a", "1", "app", "x"))
	ts.Update("ns/a", newTestPod("ns", "a", "2", "bad", "yes"))
	got, ok := ts.Get("ns/a")
	require.True(t, ok)
	assert.Equal(t, "2", got.(*v1.Pod).ResourceVersion, "the update is stored")
	keys, err := ts.IndexKeys("app", "x")
	require.NoError(t, err)
	assert.Empty(t, keys, "and left out of the index it failed")
	ts.Replace(map[string]interface{}{"ns/b": newTestPod("ns", "b", "3", "bad", "yes"), "ns/c": newTestPod("ns", "c", "3", "app", "x")}, "3")
	assert.Equal(t, []string{"ns/b", "ns/c"}, sortedStrings(ts.ListKeys()))
	keys, err = ts.IndexKeys("app", "x")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/c"}, keys)
	assert.Equal(t, []string{
		"Object stored but left out of an index: cannot index a [key ns/a index app]",
		"Object stored but left out of an index: cannot index b [key ns/b index app]",
	}, reported.take())
}

func TestS14_TransactionSkipsOnlyFailingWrites(t *testing.T) {
	reported := captureReportedErrors(t)
	flaky := &storeFlakyIndex{}
	s := formIndexer(MetaNamespaceKeyFunc, Indexers{"app": flaky.fn})
	txErr := s.(TransactionStore).Transaction(
		Transaction{Object: newTestPod("ns", "a", "1", "app", "x"), Type: TransactionTypeAdd},
		Transaction{Object: newTestPod("ns", "b", "2", "bad", "yes"), Type: TransactionTypeAdd},
		Transaction{Object: newTestPod("ns", "c", "3", "app", "x"), Type: "Upsert"},
		Transaction{Object: newTestPod("ns", "d", "4", "app", "y"), Type: TransactionTypeUpdate},
	)
	require.NotNil(t, txErr)
	assert.Equal(t, []int{0, 1, 3}, txErr.SuccessfulIndices)
	require.Len(t, txErr.Errors, 1)
	assert.EqualError(t, txErr.Errors[0], `unknown transaction type "Upsert"`)
	assert.Equal(t, []string{"ns/a", "ns/b", "ns/d"}, storeSortedKeys(s))
	assert.Equal(t, []string{"Object stored but left out of an index: cannot index b [key ns/b index app]"}, reported.take(),
		"a write whose index function fails is stored, left out of that index, and reported")
	keys, err := s.IndexKeys("app", "x")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a"}, keys)
}
