package cache

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientcache "k8s.io/client-go/tools/cache"
)

// shape renders the results of a call as a caller comparing with nil or
// ranging over them would see them: nil or empty for slices and maps, and
// whether each error is set.
func shape(results ...interface{}) string {
	out := ""
	for _, r := range results {
		if err, ok := r.(error); ok || r == nil {
			out += fmt.Sprintf("[err=%v]", err != nil)
			continue
		}
		v := reflect.ValueOf(r)
		switch {
		case (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.IsNil():
			out += "[nil]"
		case v.Kind() == reflect.Slice || v.Kind() == reflect.Map:
			out += fmt.Sprintf("[len %d]", v.Len())
		default:
			out += fmt.Sprintf("[%v]", r)
		}
	}
	return out
}

// emptinessIndexerQueries are every Indexer read that returns a slice or a
// map, on the namespace index, an unknown index and an unknown value.
func emptinessIndexerQueries(s clientcache.Indexer) map[string]string {
	pod := newTestPod("ns", "q", "1")
	out := map[string]string{
		"List":                         shape(s.List()),
		"ListKeys":                     shape(s.ListKeys()),
		"GetIndexers":                  shape(s.GetIndexers()),
		"ListIndexFuncValues ns":       shape(s.ListIndexFuncValues(NamespaceIndex)),
		"ListIndexFuncValues unknown":  shape(s.ListIndexFuncValues("unknown")),
		"ByIndex ns":                   shape(s.ByIndex(NamespaceIndex, "ns")),
		"ByIndex ns, unknown value":    shape(s.ByIndex(NamespaceIndex, "other")),
		"ByIndex unknown":              shape(s.ByIndex("unknown", "ns")),
		"IndexKeys ns":                 shape(s.IndexKeys(NamespaceIndex, "ns")),
		"IndexKeys ns, unknown value":  shape(s.IndexKeys(NamespaceIndex, "other")),
		"IndexKeys unknown":            shape(s.IndexKeys("unknown", "ns")),
		"Index ns":                     shape(s.Index(NamespaceIndex, pod)),
		"Index ns, unknown value":      shape(s.Index(NamespaceIndex, newTestPod("other", "q", "1"))),
		"Index unknown":                shape(s.Index("unknown", pod)),
		"ListAll":                      shape(ListAll(s, labels.Everything(), func(interface{}) {})),
		"GenericLister List":           shape(NewGenericLister(s, schema.GroupResource{}).List(labels.Everything())),
		"GenericLister ByNamespace":    shape(NewGenericLister(s, schema.GroupResource{}).ByNamespace("ns").List(labels.Everything())),
		"GenericLister other ns":       shape(NewGenericLister(s, schema.GroupResource{}).ByNamespace("other").List(labels.Everything())),
		"theirs GenericLister List":    shape(clientcache.NewGenericLister(s, schema.GroupResource{}).List(labels.Everything())),
		"theirs GenericLister other":   shape(clientcache.NewGenericLister(s, schema.GroupResource{}).ByNamespace("other").List(labels.Everything())),
		"ListAllByNamespace":           shape(ListAllByNamespace(s, "ns", labels.Everything(), func(interface{}) {})),
		"ListAllByNamespace unindexed": shape(ListAllByNamespace(emptinessUnindexed(s), "ns", labels.Everything(), func(interface{}) {})),
	}
	return out
}

// emptinessUnindexed hides s's indexes behind an Indexer with none.
func emptinessUnindexed(s clientcache.Indexer) clientcache.Indexer {
	return emptinessNoIndexes{s}
}

type emptinessNoIndexes struct{ clientcache.Indexer }

func (emptinessNoIndexes) GetIndexers() Indexers { return Indexers{} }

// TestEmptyResultsMatchClientGo compares nil against empty results of every
// store read, ours and client-go's on the same input.
func TestEmptyResultsMatchClientGo(t *testing.T) {
	states := map[string]func(s clientcache.Indexer){
		"fresh": func(clientcache.Indexer) {},
		"emptied by delete": func(s clientcache.Indexer) {
			p := newTestPod("ns", "a", "1")
			_ = s.Add(p)
			_ = s.Delete(p)
		},
		"emptied by Replace(nil)": func(s clientcache.Indexer) {
			_ = s.Add(newTestPod("ns", "a", "1"))
			_ = s.Replace(nil, "2")
		},
		"emptied by Replace(empty)": func(s clientcache.Indexer) {
			_ = s.Add(newTestPod("ns", "a", "1"))
			_ = s.Replace([]interface{}{}, "2")
		},
		"one object": func(s clientcache.Indexer) { _ = s.Add(newTestPod("ns", "a", "1")) },
	}
	indexers := map[string]func() Indexers{
		"namespace index": func() Indexers { return Indexers{NamespaceIndex: MetaNamespaceIndexFunc} },
		"empty Indexers":  func() Indexers { return Indexers{} },
		"nil Indexers":    func() Indexers { return nil },
	}
	for iname, mk := range indexers {
		for sname, prepare := range states {
			t.Run(iname+"/"+sname, func(t *testing.T) {
				ours, theirs := NewIndexer(MetaNamespaceKeyFunc, mk()), clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, mk())
				prepare(ours)
				prepare(theirs)
				assert.Equal(t, emptinessIndexerQueries(theirs), emptinessIndexerQueries(ours))
			})
		}
	}
}

// TestEmptyThreadSafeStoreResultsMatchClientGo is the same comparison for
// ThreadSafeStore.
func TestEmptyThreadSafeStoreResultsMatchClientGo(t *testing.T) {
	query := func(s clientcache.ThreadSafeStore) map[string]string {
		return map[string]string{
			"List":                shape(s.List()),
			"ListKeys":            shape(s.ListKeys()),
			"GetIndexers":         shape(s.GetIndexers()),
			"ListIndexFuncValues": shape(s.ListIndexFuncValues(NamespaceIndex)),
			"unknown values":      shape(s.ListIndexFuncValues("unknown")),
			"ByIndex":             shape(s.ByIndex(NamespaceIndex, "ns")),
			"ByIndex unknown":     shape(s.ByIndex("unknown", "ns")),
			"IndexKeys":           shape(s.IndexKeys(NamespaceIndex, "ns")),
			"IndexKeys unknown":   shape(s.IndexKeys("unknown", "ns")),
			"Index":               shape(s.Index(NamespaceIndex, newTestPod("ns", "q", "1"))),
		}
	}
	for name, prepare := range map[string]func(s clientcache.ThreadSafeStore){
		"fresh":             func(clientcache.ThreadSafeStore) {},
		"emptied by delete": func(s clientcache.ThreadSafeStore) { s.Add("ns/a", newTestPod("ns", "a", "1")); s.Delete("ns/a") },
		"emptied by Replace": func(s clientcache.ThreadSafeStore) {
			s.Add("ns/a", newTestPod("ns", "a", "1"))
			s.Replace(map[string]interface{}{}, "1")
		},
	} {
		t.Run(name, func(t *testing.T) {
			ours := NewThreadSafeStore(Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, Indices{})
			theirs := clientcache.NewThreadSafeStore(Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, Indices{})
			prepare(ours)
			prepare(theirs)
			assert.Equal(t, query(theirs), query(ours))
		})
	}
}

// TestEmptyTransactionResultsMatchClientGo: a transaction whose every
// write fails reports its (empty) successes as a non-nil slice.
func TestEmptyTransactionResultsMatchClientGo(t *testing.T) {
	txns := []Transaction{{Type: TransactionTypeAdd, Object: "no meta"}, {Type: TransactionTypeUpdate, Object: 42}}
	ours := NewIndexer(MetaNamespaceKeyFunc, Indexers{}).(TransactionStore).Transaction(txns...)
	theirs := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, Indexers{}).(clientcache.TransactionStore).Transaction(txns...)
	assert.Equal(t, shape(theirs.SuccessfulIndices, theirs.Errors, theirs.TotalTransactions), shape(ours.SuccessfulIndices, ours.Errors, ours.TotalTransactions))
	assert.Equal(t, theirs.Error(), ours.Error())
}

// TestEmptyHeapResultsMatchClientGo compares Heap's List and ListKeys.
func TestEmptyHeapResultsMatchClientGo(t *testing.T) {
	less := func(a, b interface{}) bool { return a.(heapTestItem).priority < b.(heapTestItem).priority }
	ours, theirs := NewHeap(heapTestKey, less), clientcache.NewHeap(heapTestKey, less)
	assert.Equal(t, shape(theirs.List(), theirs.ListKeys()), shape(ours.List(), ours.ListKeys()), "fresh")
	it := heapTestItem{name: "a", priority: 1}
	for _, h := range []interface {
		Add(interface{}) error
		Delete(interface{}) error
	}{ours, theirs} {
		_ = h.Add(it)
		_ = h.Delete(it)
	}
	assert.Equal(t, shape(theirs.List(), theirs.ListKeys()), shape(ours.List(), ours.ListKeys()), "emptied")
}
