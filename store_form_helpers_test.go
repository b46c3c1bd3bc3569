package cache

import (
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/store"
)

// The store engine lives in internal/store and its forms in internal/form.
// The root's tests reach them through these helpers, which use only their
// exported APIs (the form.Form seam, Prehold, a snapshot record's load):
// the engines' private state is checked in their own packages.

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

// withoutIndexValues is p with no index values held, only its form: p's
// encoding loaded back as a restart snapshot's record, framed for no
// generation of index functions. A Replace reads it back and indexes it
// afresh.
func withoutIndexValues(t *testing.T, idx Indexer, p store.Preheld) store.Preheld {
	t.Helper()
	st, err := store.NewSnapshots(idx.(*cache).storage, &v1.Pod{}, "")
	require.NoError(t, err)
	// A value is its frame, length first, then the record: here an empty
	// frame.
	rec, err := st.AppendRecord([]byte{0}, p.Key(), p.Held())
	require.NoError(t, err)
	loaded, err := st.LoadRecord(p.Key(), rec, nil, nil)
	require.NoError(t, err)
	bare, ok := loaded.(store.Preheld)
	require.True(t, ok, "loaded a %T", loaded)
	require.Nil(t, bare.IndexSet())
	require.Nil(t, bare.IndexValues())
	return bare
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
