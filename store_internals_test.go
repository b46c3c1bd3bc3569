package cache

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/store"
)

// The store engine lives in internal/store and its forms in internal/form;
// the tests here that check how the root's stores use them reach their
// unexported state through these helpers alone.

// unexportedField is the address of s's field name, s a pointer to a
// struct.
func unexportedField(s any, name string) unsafe.Pointer {
	return unsafe.Pointer(reflect.ValueOf(s).Elem().FieldByName(name).UnsafeAddr())
}

// storeMutex is the lock of m.
func storeMutex(m *store.Map) *sync.Mutex { return (*sync.Mutex)(unexportedField(m, "mu")) }

// withThreadSafeStoredForm makes a store built by NewThreadSafeStore hold
// its objects in form f.
func withThreadSafeStoredForm(f form.Form) ThreadSafeStoreOption {
	return func(s *threadSafeMap) { s.cfg.Form = f }
}

// wrapInformerForm rebuilds inf's store, before Run, with its form wrapped
// by wrap.
func wrapInformerForm(inf SharedIndexInformer, wrap func(form.Form) form.Form) {
	s := inf.(*sharedIndexInformer)
	s.indexer = newCache(informerKeyFunc, s.indexer.GetIndexers(), []StoreOption{
		withStoredForm(wrap(s.indexer.form)), WithStoreMetrics(s.identifier, s.metricsProvider),
	})
}

// passForm holds objects as they are, but not in place: its store
// preholds them.
type passForm struct{ form.Plain }

func (passForm) InPlace() bool { return false }

// testPreheld is obj preheld under key, as a preholding store keeps it,
// with obj itself as the held value.
func testPreheld(key string, obj any) store.Preheld {
	p, err := store.New(nil, store.Config{Form: passForm{}}).Prehold(key, obj)
	if err != nil {
		panic(err)
	}
	return p
}

// withoutIndexValues is p with no index values held, only its form: a
// Replace reads it back and indexes it afresh.
func withoutIndexValues(p store.Preheld) store.Preheld {
	index := reflect.ValueOf(&p).Elem().FieldByName("index")
	fresh := reflect.New(index.Type().Elem())
	oldForm := index.Elem().FieldByName("form")
	settable := func(v reflect.Value) reflect.Value {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	settable(fresh.Elem().FieldByName("form")).Set(settable(oldForm))
	settable(index).Set(fresh)
	return p
}

// heldRecorder is a compact form that tells record what it gives the
// store's map to hold: Hold is the only way into the map.
type heldRecorder struct {
	*form.Compact
	record func(key string, held any)
}

func (r heldRecorder) Hold(key string, obj any) (any, error) {
	held, err := r.Compact.Hold(key, obj)
	if err == nil {
		r.record(key, held)
	}
	return held, err
}

// compactRecordingHeld is a compact Indexer without hot cache, indexed by
// namespace, as NewCompactIndexer builds it, whose form tells record what
// the map holds.
func compactRecordingHeld(record func(key string, held any)) Indexer {
	return newCache(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, []StoreOption{withStoredForm(heldRecorder{form.NewCompact(-1), record})})
}
