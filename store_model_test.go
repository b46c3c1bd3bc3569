package cache

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	clientcache "k8s.io/client-go/tools/cache"
)

// storeModelIndexers are the index functions the randomized tests use: a
// single value, an optional single value, several values (with a
// duplicate), and always none.
func storeModelIndexers() Indexers {
	return Indexers{
		NamespaceIndex: MetaNamespaceIndexFunc,
		"app": func(obj interface{}) ([]string, error) {
			if app, ok := obj.(*v1.Pod).Labels["app"]; ok {
				return []string{app}, nil
			}
			return nil, nil
		},
		"labels": func(obj interface{}) ([]string, error) {
			var out []string
			for k, v := range obj.(*v1.Pod).Labels {
				out = append(out, k+"="+v, k+"="+v)
			}
			return out, nil
		},
		"none": func(interface{}) ([]string, error) { return []string{}, nil },
	}
}

// storeModelExtraIndexers are added mid-run with AddIndexers.
func storeModelExtraIndexers() Indexers {
	return Indexers{
		"tier": func(obj interface{}) ([]string, error) {
			return []string{obj.(*v1.Pod).Labels["tier"]}, nil
		},
	}
}

// storeModel is the reference: a plain map, and index answers computed by
// scanning it.
type storeModel struct {
	items    map[string]interface{}
	indexers Indexers
	rv       string
}

func newStoreModel() *storeModel {
	return &storeModel{items: map[string]interface{}{}, indexers: storeModelIndexers()}
}

func (m *storeModel) put(obj interface{}) {
	key, _ := MetaNamespaceKeyFunc(obj)
	m.items[key] = obj
	m.rv = obj.(*v1.Pod).ResourceVersion
}

func (m *storeModel) del(obj interface{}) {
	key, _ := MetaNamespaceKeyFunc(obj)
	delete(m.items, key)
	m.rv = obj.(*v1.Pod).ResourceVersion
}

func (m *storeModel) replace(list []interface{}, rv string) {
	m.items = map[string]interface{}{}
	for _, obj := range list {
		key, _ := MetaNamespaceKeyFunc(obj)
		m.items[key] = obj
	}
	m.rv = rv
}

func (m *storeModel) valuesOf(index string, obj interface{}) []string {
	vals, _ := m.indexers[index](obj)
	return vals
}

// storeModelIndex is one index of the model, computed by scanning it:
// the sorted keys under each value.
type storeModelIndex map[string][]string

// index scans the model once for the index named name, so that a check
// costs one pass per index rather than one per value and object.
func (m *storeModel) index(name string) storeModelIndex {
	idx := storeModelIndex{}
	for key, obj := range m.items {
		seen := map[string]bool{}
		for _, v := range m.valuesOf(name, obj) {
			if !seen[v] {
				seen[v] = true
				idx[v] = append(idx[v], key)
			}
		}
	}
	for _, keys := range idx {
		sort.Strings(keys)
	}
	return idx
}

// keys returns the sorted keys under value, never nil.
func (idx storeModelIndex) keys(value string) []string {
	return append([]string{}, idx[value]...)
}

// values returns the index's values, sorted.
func (idx storeModelIndex) values() []string {
	out := make([]string, 0, len(idx))
	for v := range idx {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// storeModelKeysOf returns the sorted keys of objs.
func storeModelKeysOf(objs []interface{}) []string {
	keys := make([]string, 0, len(objs))
	for _, obj := range objs {
		key, _ := MetaNamespaceKeyFunc(obj)
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

func storeModelSorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// storeModelPod returns a random pod among a small key space.
func storeModelPod(r *rand.Rand, rv int) *v1.Pod {
	labels := []string{}
	if r.Intn(3) > 0 {
		labels = append(labels, "app", "a"+strconv.Itoa(r.Intn(4)))
	}
	if r.Intn(2) == 0 {
		labels = append(labels, "tier", "t"+strconv.Itoa(r.Intn(3)))
	}
	if r.Intn(4) == 0 {
		labels = append(labels, "x", "y")
	}
	return newTestPod("ns-"+strconv.Itoa(r.Intn(3)), "p"+strconv.Itoa(r.Intn(12)), strconv.Itoa(rv), labels...)
}

// storeModelCheck compares every read of got with the model.
func storeModelCheck(t *testing.T, step string, got Indexer, m *storeModel) {
	t.Helper()
	want := make([]string, 0, len(m.items))
	for k := range m.items {
		want = append(want, k)
	}
	sort.Strings(want)
	storeModelEqual(t, step+" List", storeModelKeysOf(got.List()), want)
	storeModelEqual(t, step+" ListKeys", storeModelSorted(got.ListKeys()), want)
	for i := 0; i < 12; i++ {
		key := "ns-" + strconv.Itoa(i%3) + "/p" + strconv.Itoa(i)
		obj, ok, err := got.GetByKey(key)
		if err != nil || ok != (m.items[key] != nil) || (ok && obj != m.items[key]) {
			t.Fatalf("%s: GetByKey(%q) = %v, %v, %v", step, key, obj, ok, err)
		}
	}
	for key, obj := range m.items {
		item, ok, err := got.Get(obj)
		if err != nil || !ok || item != obj {
			t.Fatalf("%s: Get(%s) = %v, %v, %v", step, key, item, ok, err)
		}
	}
	for name := range got.GetIndexers() {
		idx := m.index(name)
		values := idx.values()
		storeModelEqual(t, step+" ListIndexFuncValues "+name, storeModelSorted(got.ListIndexFuncValues(name)), values)
		for _, v := range append(values, "missing") {
			keys, err := got.IndexKeys(name, v)
			if err != nil {
				t.Fatal(err)
			}
			storeModelEqual(t, step+" IndexKeys "+name+" "+v, keys, idx.keys(v))
			objs, err := got.ByIndex(name, v)
			if err != nil {
				t.Fatal(err)
			}
			storeModelEqual(t, step+" ByIndex "+name+" "+v, storeModelKeysOf(objs), idx.keys(v))
		}
		for _, obj := range m.items {
			objs, err := got.Index(name, obj)
			if err != nil {
				t.Fatal(err)
			}
			wantKeys := map[string]bool{}
			for _, v := range m.valuesOf(name, obj) {
				for _, k := range idx[v] {
					wantKeys[k] = true
				}
			}
			wantList := []string{}
			for k := range wantKeys {
				wantList = append(wantList, k)
			}
			sort.Strings(wantList)
			storeModelEqual(t, step+" Index "+name, storeModelKeysOf(objs), wantList)
		}
	}
	if rv := got.LastStoreSyncResourceVersion(); rv != m.rv {
		t.Fatalf("%s: LastStoreSyncResourceVersion = %q, want %q", step, rv, m.rv)
	}
}

func storeModelEqual(t *testing.T, what string, got, want []string) {
	if !slices.Equal(got, want) {
		t.Helper() // only on failure: it costs a stack walk per call
		t.Fatalf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// storeModelStep applies one random write to every store in stores and to
// the model, and names it.
func storeModelStep(r *rand.Rand, rv int, stores []Indexer, m *storeModel) string {
	switch op := r.Intn(20); {
	case op < 7:
		p := storeModelPod(r, rv)
		for _, s := range stores {
			if err := s.Add(p); err != nil {
				panic(err)
			}
		}
		m.put(p)
		return "Add " + p.Name
	case op < 12:
		p := storeModelPod(r, rv)
		for _, s := range stores {
			if err := s.Update(p); err != nil {
				panic(err)
			}
		}
		m.put(p)
		return "Update " + p.Name
	case op < 16:
		p := storeModelPod(r, rv)
		for _, s := range stores {
			if err := s.Delete(p); err != nil {
				panic(err)
			}
		}
		m.del(p)
		return "Delete " + p.Name
	case op < 17:
		list := make([]interface{}, r.Intn(10))
		for i := range list {
			list[i] = storeModelPod(r, rv)
		}
		for _, s := range stores {
			if err := s.Replace(append([]interface{}{}, list...), "r"+strconv.Itoa(rv)); err != nil {
				panic(err)
			}
		}
		m.replace(list, "r"+strconv.Itoa(rv))
		return "Replace"
	case op < 18:
		if _, ok := m.indexers["tier"]; !ok {
			for _, s := range stores {
				if err := s.AddIndexers(storeModelExtraIndexers()); err != nil {
					panic(err)
				}
			}
			m.indexers["tier"] = storeModelExtraIndexers()["tier"]
			return "AddIndexers"
		}
		fallthrough
	default:
		txns := make([]Transaction, 1+r.Intn(5))
		for i := range txns {
			p := storeModelPod(r, rv)
			txns[i] = Transaction{Object: p, Type: []TransactionType{TransactionTypeAdd, TransactionTypeUpdate, TransactionTypeDelete}[r.Intn(3)]}
			if txns[i].Type == TransactionTypeDelete {
				m.del(p)
			} else {
				m.put(p)
			}
		}
		for _, s := range stores {
			if err := s.(TransactionStore).Transaction(txns...); err != nil {
				panic(err)
			}
		}
		return "Transaction"
	}
}

func TestStoreModelRandomized(t *testing.T) { forEachStorageMode(t, testStoreModelRandomized) }

func testStoreModelRandomized(t *testing.T, mode storageMode) {
	for seed := int64(1); seed <= 12; seed++ {
		r := rand.New(rand.NewSource(seed))
		ours := mode.newIndexer(MetaNamespaceKeyFunc, storeModelIndexers())
		m := newStoreModel()
		for rv := 1; rv <= 150; rv++ {
			step := storeModelStep(r, rv, []Indexer{ours}, m)
			storeModelCheck(t, fmt.Sprintf("seed %d step %d %s", seed, rv, step), ours, m)
		}
	}
}

// TestStoreDifferentialAgainstClientGo runs the same writes on client-go's
// Indexer and ours and compares every read of both with the model.
func TestStoreDifferentialAgainstClientGo(t *testing.T) {
	forEachStorageMode(t, testStoreDifferentialAgainstClientGo)
}

func testStoreDifferentialAgainstClientGo(t *testing.T, mode storageMode) {
	for seed := int64(100); seed < 104; seed++ {
		r := rand.New(rand.NewSource(seed))
		ours := mode.newIndexer(MetaNamespaceKeyFunc, storeModelIndexers())
		theirs := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, storeModelIndexers())
		m := newStoreModel()
		for rv := 1; rv <= 150; rv++ {
			step := storeModelStep(r, rv, []Indexer{ours, theirs}, m)
			name := fmt.Sprintf("seed %d step %d %s", seed, rv, step)
			storeModelCheck(t, name+" (client-go)", theirs, m)
			storeModelCheck(t, name, ours, m)
		}
	}
}
