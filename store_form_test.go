package cache

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/labelset"
	"github.com/openinformer/cache/internal/objmeta"
)

// These tests prove the form.Form seam: under a form that boxes every
// object, a store must behave exactly as without one. A read that skipped
// view would hand a box to the caller and a write that skipped hold would
// put a bare object in the map; either fails the store's tests.

// testStoredForm is the form the store rule tests build their stores with;
// nil while they run as written, a boxForm under TestStoreRulesBoxed.
var testStoredForm form.Form

// box is what boxForm holds for an object.
type box struct {
	key string
	obj any
}

// boxForm holds each object in a box and tracks which keys the map holds,
// so that a missed drop shows. refuse, if set, names objects it refuses.
type boxForm struct {
	mu     sync.Mutex
	live   map[string]bool
	refuse func(obj any) bool
}

func newBoxForm() *boxForm { return &boxForm{live: map[string]bool{}} }

func (f *boxForm) Hold(key string, obj any) (any, error) {
	if f.refuse != nil && f.refuse(obj) {
		return nil, errors.New("refused by the test form")
	}
	f.mu.Lock()
	f.live[key] = true
	f.mu.Unlock()
	return &box{key: key, obj: obj}, nil
}

func (f *boxForm) View(key string, held any, _ bool) (any, error) {
	b, ok := held.(*box)
	if !ok {
		return nil, fmt.Errorf("held value of %q is not boxed: %T", key, held)
	}
	if b.key != key {
		return nil, fmt.Errorf("held value of %q was boxed for %q", key, b.key)
	}
	return b.obj, nil
}

func (f *boxForm) InPlace() bool { return false }

// Labels are never known apart: selecting reads view every object.
func (f *boxForm) Labels(string, any) (*labelset.Set, bool) { return nil, false }

// Retier keeps every box: boxes have one tier.
func (f *boxForm) Retier(string, any) (any, bool) { return nil, false }

// SweepPass walks once.
func (f *boxForm) SweepPass(pass int) bool { return pass == 0 }

func (f *boxForm) HoldAhead(key string, obj any) (any, error) { return f.Hold(key, obj) }

func (f *boxForm) RecordCodec(runtime.Object) (*compact.Codec, bool, error) {
	return nil, false, errors.New("no snapshots of boxed objects")
}

func (f *boxForm) Drop(key string) {
	f.mu.Lock()
	delete(f.live, key)
	f.mu.Unlock()
}

// liveKeys returns, sorted, the keys held and not dropped.
func (f *boxForm) liveKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(f.live))
	for k := range f.live {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func withTestForm(opts []StoreOption) []StoreOption {
	if testStoredForm == nil {
		return opts
	}
	return append(opts, withStoredForm(testStoredForm))
}

func formStore(keyFunc KeyFunc, opts ...StoreOption) Store {
	return NewStore(keyFunc, withTestForm(opts)...)
}

func formIndexer(keyFunc KeyFunc, indexers Indexers, opts ...StoreOption) Indexer {
	return NewIndexer(keyFunc, indexers, withTestForm(opts)...)
}

func formThreadSafeStore(indexers Indexers, indices Indices, opts ...ThreadSafeStoreOption) ThreadSafeStore {
	if testStoredForm != nil {
		opts = append(opts, withThreadSafeStoredForm(testStoredForm))
	}
	return NewThreadSafeStore(indexers, indices, opts...)
}

// TestStoreRulesBoxed runs the store rule tests again with every store
// holding its objects boxed.
func TestStoreRulesBoxed(t *testing.T) {
	testStoredForm = newBoxForm()
	defer func() { testStoredForm = nil }()
	for name, test := range map[string]func(*testing.T){
		"S1": TestS1_ConstructorsAndOptions, "S2": TestS2_AddUpdateKeyTransformAndOverwrite,
		"S3": TestS3_Delete, "S4": TestS4_GetAndListReturnStoredPointers, "S5": TestS5_Replace,
		"S6": TestS6_ResyncIsANoOp, "S7": TestS7_StoreResourceVersion,
		"S8": TestS8_IndexFuncErrorLeavesObjectOutOfThatIndexOnly, "S8ClientGo": TestS8_ClientGoNamespaceIndexFuncIndexesLikeOurs,
		"S8ThreadSafe": TestS8_ThreadSafeStoreStoresUnindexableObjects, "S9": TestS9_Index,
		"S10": TestS10_ByIndexAndIndexKeys, "S11": TestS11_ListIndexFuncValuesOfUnknownIndex,
		"S12": TestS12_GetIndexers, "S13": TestS13_AddIndexers, "S14": TestS14_StoreTransaction,
		"S14Skips": TestS14_TransactionSkipsOnlyFailingWrites, "S15": TestS15_ThreadSafeStoreTransactionVersion,
		"S16": TestS16_ThreadSafeStore, "NilObjects": TestStoreRejectsNilObjects,
		"TypedIndexer": TestTypedIndexerFuncRejectsWrongTypes, "M1": TestM1_Listers,
	} {
		t.Run(name, test)
	}
}

// TestStoreModelBoxed runs the randomized model and the differential test
// against client-go with our store holding its objects boxed, and checks
// that the form was told about every key that left the map.
func TestStoreModelBoxed(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		r := rand.New(rand.NewSource(seed))
		form := newBoxForm()
		ours := NewIndexer(MetaNamespaceKeyFunc, storeModelIndexers(), withStoredForm(form))
		theirs := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, storeModelIndexers())
		m := newStoreModel()
		for rv := 1; rv <= 150; rv++ {
			step := storeModelStep(r, rv, []Indexer{ours, theirs}, m)
			name := fmt.Sprintf("seed %d step %d %s", seed, rv, step)
			storeModelCheck(t, name+" (client-go)", theirs, m)
			storeModelCheck(t, name, ours, m)
			require.Equal(t, storeModelSorted(ours.ListKeys()), form.liveKeys(), "%s: keys the form holds", name)
		}
	}
}

// TestStoredFormRefusalCostsOnlyThatObject checks every write path with a
// form that refuses some objects: the refused one is not stored and said
// so, the others are stored.
func TestStoredFormRefusalCostsOnlyThatObject(t *testing.T) {
	form := newBoxForm()
	form.refuse = func(obj any) bool { return strings.HasPrefix(mustName(obj), "bad") }
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, withStoredForm(form))
	good, bad := newTestPod("ns", "good", "1"), newTestPod("ns", "bad", "1")

	require.NoError(t, s.Add(good))
	assert.ErrorContains(t, s.Add(bad), "refused by the test form")
	assert.Equal(t, []string{"ns/good"}, storeSortedKeys(s))

	err := s.Replace([]any{bad, good, newTestPod("ns", "other", "2")}, "2")
	assert.ErrorContains(t, err, "refused by the test form")
	assert.Equal(t, []string{"ns/good", "ns/other"}, storeSortedKeys(s))

	txErr := s.(TransactionStore).Transaction(
		Transaction{Type: TransactionTypeAdd, Object: newTestPod("ns", "bad2", "3")},
		Transaction{Type: TransactionTypeDelete, Object: good},
	)
	require.NotNil(t, txErr)
	assert.Equal(t, []int{1}, txErr.SuccessfulIndices)
	assert.Equal(t, []string{"ns/other"}, storeSortedKeys(s))
	byNS, err := s.ByIndex(NamespaceIndex, "ns")
	require.NoError(t, err)
	assert.Len(t, byNS, 1)
	assert.Equal(t, []string{"ns/other"}, form.liveKeys())

	ts := NewThreadSafeStore(nil, nil, withThreadSafeStoredForm(form))
	ts.Update("k", bad)
	ts.Replace(map[string]any{"a": bad, "b": good}, "4")
	assert.Equal(t, []string{"b"}, ts.ListKeys(), "a refused object is left out, the others stored")
}

func mustName(obj any) string {
	m, err := objmeta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	return m.GetName()
}

// hookForm is a boxForm that can run a hook (another write, say) from its
// first view, outside the lock (a write from a view made under it would
// wait forever). internal/store's views_unlocked_test.go checks, with the
// store's lock in hand, that no view is made under it, for the same writes
// and reads.
type hookForm struct {
	*boxForm
	onFirstView func(key string)
}

func (f *hookForm) View(key string, held any, keep bool) (any, error) {
	if hook := f.onFirstView; hook != nil {
		f.onFirstView = nil
		hook(key)
	}
	return f.boxForm.View(key, held, keep)
}

func newHookIndexer() (Indexer, *hookForm) {
	form := &hookForm{boxForm: newBoxForm()}
	return NewIndexer(MetaNamespaceKeyFunc, storeModelIndexers(), withStoredForm(form)), form
}

// A store with a form not in place keeps its indexes right through every
// kind of write and read. (That it views, which may decode, only while its
// lock is free is internal/store's TestFormNeverViewedUnderTheLock, for
// the same writes and reads.)
func TestStoredFormWritesAndReads(t *testing.T) {
	idx, _ := newHookIndexer()
	pods := make([]any, 0, 80)
	for i := range 80 {
		pods = append(pods, newTestPod("ns", fmt.Sprint("p", i), "1", "app", fmt.Sprint(i%3)))
	}
	require.NoError(t, idx.Replace(pods[:70], "1"))
	for _, p := range pods {
		require.NoError(t, idx.Update(p))
	}
	require.NoError(t, idx.Update(newTestPod("ns", "p1", "2", "app", "moved")))
	require.NoError(t, idx.Delete(pods[2]))
	require.Nil(t, idx.(TransactionStore).Transaction(
		Transaction{Type: TransactionTypeUpdate, Object: newTestPod("ns", "p3", "3", "app", "x")},
		Transaction{Type: TransactionTypeDelete, Object: pods[4]},
		Transaction{Type: TransactionTypeUpdate, Object: newTestPod("ns", "p3", "4", "app", "y")},
	))
	_, _, err := idx.GetByKey("ns/p5")
	require.NoError(t, err)
	assert.Len(t, idx.List(), 78)
	byApp, err := idx.ByIndex("app", "0")
	require.NoError(t, err)
	assert.NotEmpty(t, byApp)
	_, err = idx.Index("app", newTestPod("ns", "q", "1", "app", "1"))
	require.NoError(t, err)
	require.NoError(t, idx.AddIndexers(Indexers{"name": func(obj any) ([]string, error) { return []string{mustName(obj)}, nil }}))
	storeModelCheck(t, "after the writes", idx, modelOf(idx))
}

// modelOf is a storeModel holding what idx holds, to check its indexes
// against.
func modelOf(idx Indexer) *storeModel {
	m := newStoreModel()
	m.indexers = idx.GetIndexers()
	for _, obj := range idx.List() {
		m.put(obj)
	}
	m.rv = idx.(*cache).storage.Freeze().RV()
	return m
}

// A write whose key changes between the read of its prior (outside the
// lock) and the write reads the prior again, also when the prior was read
// by the informer's lookup: the indexes follow the key's last object
// whichever write came first.
func TestStoredFormWriteRacingAnotherWriteOfItsKey(t *testing.T) {
	for name, write := range map[string]func(idx Indexer, obj any) error{
		"Update": func(idx Indexer, obj any) error { return idx.Update(obj) },
		"Transaction": func(idx Indexer, obj any) error {
			if txErr := idx.(TransactionStore).Transaction(Transaction{Type: TransactionTypeUpdate, Object: obj}); txErr != nil {
				return txErr
			}
			return nil
		},
		"Delete": func(idx Indexer, obj any) error { return idx.Delete(obj) },
		// An informer's write, whose prior comes from its lookup.
		"applyDeltas": func(idx Indexer, obj any) error {
			_, _, err := idx.(*cache).applyDeltas([]Delta{{Type: Updated, Object: obj}}, false, nil, nil)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			idx, form := newHookIndexer()
			require.NoError(t, idx.Add(newTestPod("ns", "a", "1", "app", "first")))
			form.onFirstView = func(string) {
				require.NoError(t, idx.Update(newTestPod("ns", "a", "2", "app", "between")))
			}
			require.NoError(t, write(idx, newTestPod("ns", "a", "3", "app", "last")))
			require.Nil(t, form.onFirstView, "the hook ran")
			for _, app := range []string{"first", "between"} {
				keys, err := idx.IndexKeys("app", app)
				require.NoError(t, err)
				assert.Empty(t, keys, "no key left under %q", app)
			}
			storeModelCheck(t, name, idx, modelOf(idx))
		})
	}
}

// AddIndexers on a store with a form builds the new index outside the lock
// and builds it again when a write lands meanwhile.
func TestStoredFormAddIndexersRacingAWrite(t *testing.T) {
	idx, form := newHookIndexer()
	require.NoError(t, idx.Add(newTestPod("ns", "a", "1", "app", "first")))
	require.NoError(t, idx.Add(newTestPod("ns", "b", "1", "app", "first")))
	form.onFirstView = func(string) {
		require.NoError(t, idx.Update(newTestPod("ns", "a", "2", "app", "between")))
	}
	byApp := func(obj any) ([]string, error) { return []string{obj.(*v1.Pod).Labels["app"]}, nil }
	require.NoError(t, idx.AddIndexers(Indexers{"app2": byApp}))
	require.Nil(t, form.onFirstView, "the hook ran")
	keys, err := idx.IndexKeys("app2", "between")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a"}, keys)
	keys, err = idx.IndexKeys("app2", "first")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/b"}, keys)
}
