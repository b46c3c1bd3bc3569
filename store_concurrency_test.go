package cache

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestStoreSnapshotsAreConsistent has a writer move every object to a new
// generation in one transaction at a time, while readers check that each
// List, ListKeys, ByIndex and IndexKeys answer shows exactly one generation.
func TestStoreSnapshotsAreConsistent(t *testing.T) {
	const objects, generations, readers = 200, 60, 4
	genIndex := func(obj interface{}) ([]string, error) {
		return []string{obj.(*v1.Pod).Labels["gen"]}, nil
	}
	multi := func(obj interface{}) ([]string, error) {
		return []string{"all", obj.(*v1.Pod).Labels["gen"]}, nil
	}
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{"gen": genIndex, "multi": multi})
	write := func(gen int) {
		txns := make([]Transaction, objects)
		for i := range txns {
			txns[i] = Transaction{Object: newTestPod("ns", "p"+strconv.Itoa(i), strconv.Itoa(gen), "gen", strconv.Itoa(gen)), Type: TransactionTypeUpdate}
		}
		if err := s.(TransactionStore).Transaction(txns...); err != nil {
			t.Error(err)
		}
	}
	write(0)

	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, readers)
	for r := 0; r < readers; r++ {
		wg.Go(func() {
			for !done.Load() {
				if msg := storeCheckOneGeneration(s, objects); msg != "" {
					errs <- msg
					return
				}
			}
		})
	}
	for gen := 1; gen <= generations; gen++ {
		write(gen)
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	if msg := storeCheckOneGeneration(s, objects); msg != "" {
		t.Error(msg)
	}
}

// storeCheckOneGeneration reads s several ways; each answer must hold all
// objects of one generation.
func storeCheckOneGeneration(s Indexer, objects int) string {
	list := s.List()
	if len(list) != objects {
		return "List length " + strconv.Itoa(len(list))
	}
	gen := list[0].(*v1.Pod).Labels["gen"]
	for _, obj := range list {
		if g := obj.(*v1.Pod).Labels["gen"]; g != gen {
			return "List mixes generations " + gen + " and " + g
		}
	}
	union, err := s.Index("multi", list[0])
	if err != nil {
		return err.Error()
	}
	if len(union) != objects {
		return "Index length " + strconv.Itoa(len(union))
	}
	if n := len(s.ListKeys()); n != objects {
		return "ListKeys length " + strconv.Itoa(n)
	}
	values := s.ListIndexFuncValues("gen")
	if len(values) != 1 {
		return "index has values " + strconv.Itoa(len(values))
	}
	byIndex, err := s.ByIndex("gen", values[0])
	if err != nil {
		return err.Error()
	}
	if len(byIndex) != objects && len(byIndex) != 0 {
		return "ByIndex length " + strconv.Itoa(len(byIndex))
	}
	keys, err := s.IndexKeys("gen", gen)
	if err != nil {
		return err.Error()
	}
	if len(keys) != objects && len(keys) != 0 {
		return "IndexKeys length " + strconv.Itoa(len(keys))
	}
	return ""
}
