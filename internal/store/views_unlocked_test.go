package store

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/form"
)

// A form not in place may decode in View; the map views only with its
// lock free, so that no reader or writer waits on a decode. The root
// package's stores are these Maps (the Store and Indexer methods call the
// ones used here; the informer's writes are ReadStoredPrior then Apply);
// its store_form_test.go runs the same writes through them.

// lockCheckForm is a compact form that records every view made while its
// map's lock is held, and can run a hook (another write, say) from the
// first view.
type lockCheckForm struct {
	*form.Compact
	m           *Map
	underLock   []string
	onFirstView func(key string)
}

func (f *lockCheckForm) View(key string, held any, keep bool) (any, error) {
	if f.m.mu.TryLock() {
		f.m.mu.Unlock()
	} else {
		f.underLock = append(f.underLock, key)
	}
	if hook := f.onFirstView; hook != nil {
		f.onFirstView = nil
		hook(key)
	}
	return f.Compact.View(key, held, keep)
}

func appPod(name, rv, app string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, Labels: map[string]string{"app": app}}}
}

func byApp(obj any) ([]string, error) { return []string{obj.(*v1.Pod).Labels["app"]}, nil }

// newLockCheckMap is a Map indexed by namespace and app in a lockCheckForm.
func newLockCheckMap() (*Map, *lockCheckForm) {
	f := &lockCheckForm{Compact: form.NewCompact(-1)}
	f.m = New(clientcache.Indexers{"namespace": clientcache.MetaNamespaceIndexFunc, "app": byApp},
		Config{Form: f, IsNamespaceIndex: isNamespaceIndex})
	return f.m, f
}

// prepareListed keys a listed object as the root's metaKeys stores do.
func prepareListed(obj any) (string, any, error) {
	key, err := clientcache.MetaNamespaceKeyFunc(obj)
	return key, obj, err
}

// assertAppIndex checks m's app index against the objects m lists.
func assertAppIndex(t *testing.T, m *Map) {
	t.Helper()
	want := map[string][]string{}
	for _, obj := range m.List() {
		p := obj.(*v1.Pod)
		want[p.Labels["app"]] = append(want[p.Labels["app"]], "ns/"+p.Name)
	}
	assert.ElementsMatch(t, slices.Collect(mapKeys(want)), m.ListIndexFuncValues("app"))
	for app, keys := range want {
		got, err := m.IndexKeys("app", app)
		require.NoError(t, err)
		assert.ElementsMatch(t, keys, got, "app=%s", app)
	}
}

func mapKeys(m map[string][]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestFormNeverViewedUnderTheLock(t *testing.T) {
	m, f := newLockCheckMap()
	pods := make([]any, 0, 80)
	for i := range 80 {
		pods = append(pods, appPod(fmt.Sprint("p", i), "1", fmt.Sprint(i%3)))
	}
	_, dropped := m.ReplaceList(pods[:70], "1", prepareListed, true)
	require.Empty(t, dropped)
	for _, p := range pods {
		require.NoError(t, m.WriteOne("ns/"+p.(*v1.Pod).Name, clientcache.TransactionTypeUpdate, p, true))
	}
	require.NoError(t, m.WriteOne("ns/p1", clientcache.TransactionTypeUpdate, appPod("p1", "2", "moved"), true))
	require.NoError(t, m.WriteOne("ns/p2", clientcache.TransactionTypeDelete, pods[2], true))
	m.Transaction(
		clientcache.ThreadSafeStoreTransaction{Transaction: clientcache.Transaction{Type: clientcache.TransactionTypeUpdate, Object: appPod("p3", "3", "x")}, Key: "ns/p3"},
		clientcache.ThreadSafeStoreTransaction{Transaction: clientcache.Transaction{Type: clientcache.TransactionTypeDelete, Object: pods[4]}, Key: "ns/p4"},
		clientcache.ThreadSafeStoreTransaction{Transaction: clientcache.Transaction{Type: clientcache.TransactionTypeUpdate, Object: appPod("p3", "4", "y")}, Key: "ns/p3"},
	)
	_, ok := m.Get("ns/p5")
	require.True(t, ok)
	assert.Len(t, m.List(), 78)
	inApp, err := m.ByIndex("app", "0")
	require.NoError(t, err)
	assert.NotEmpty(t, inApp)
	_, err = m.Index("app", appPod("q", "1", "1"))
	require.NoError(t, err)
	require.NoError(t, m.AddIndexers(clientcache.Indexers{"name": func(obj any) ([]string, error) { return []string{obj.(*v1.Pod).Name}, nil }}))
	assert.Empty(t, f.underLock, "keys viewed under the lock")
	assertAppIndex(t, m)
}

// A write whose key changes between the read of its prior (outside the
// lock) and the write reads the prior again, also when the prior was read
// by the caller (the informer's lookup): the indexes follow the key's last
// object whichever write came first.
func TestFormWriteRacingAnotherWriteOfItsKey(t *testing.T) {
	for name, write := range map[string]func(m *Map, obj *v1.Pod) error{
		"WriteOne update": func(m *Map, obj *v1.Pod) error {
			return m.WriteOne("ns/a", clientcache.TransactionTypeUpdate, obj, true)
		},
		"Transaction": func(m *Map, obj *v1.Pod) error {
			m.Transaction(clientcache.ThreadSafeStoreTransaction{Transaction: clientcache.Transaction{Type: clientcache.TransactionTypeUpdate, Object: obj}, Key: "ns/a"})
			return nil
		},
		"WriteOne delete": func(m *Map, obj *v1.Pod) error {
			return m.WriteOne("ns/a", clientcache.TransactionTypeDelete, obj, true)
		},
		// An informer's write, whose prior comes from its lookup.
		"prior then Apply": func(m *Map, obj *v1.Pod) error {
			key, prior := m.ReadStoredPrior("ns/a")
			b := GetBatch(1)
			defer b.Release()
			b.ByName = true
			b.Add(key, clientcache.TransactionTypeUpdate, obj, prior, nil)
			m.Apply(b)
			return b.Err(0)
		},
	} {
		t.Run(name, func(t *testing.T) {
			m, f := newLockCheckMap()
			require.NoError(t, m.WriteOne("ns/a", clientcache.TransactionTypeUpdate, appPod("a", "1", "first"), true))
			f.onFirstView = func(string) {
				require.NoError(t, m.WriteOne("ns/a", clientcache.TransactionTypeUpdate, appPod("a", "2", "between"), true))
			}
			require.NoError(t, write(m, appPod("a", "3", "last")))
			require.Nil(t, f.onFirstView, "the hook ran")
			assert.Empty(t, f.underLock)
			for _, app := range []string{"first", "between"} {
				keys, err := m.IndexKeys("app", app)
				require.NoError(t, err)
				assert.Empty(t, keys, "no key left under %q", app)
			}
			assertAppIndex(t, m)
		})
	}
}

// AddIndexers with a form not in place builds the new index outside the
// lock and builds it again when a write lands meanwhile.
func TestFormAddIndexersRacingAWrite(t *testing.T) {
	m, f := newLockCheckMap()
	require.NoError(t, m.WriteOne("ns/a", clientcache.TransactionTypeUpdate, appPod("a", "1", "first"), true))
	require.NoError(t, m.WriteOne("ns/b", clientcache.TransactionTypeUpdate, appPod("b", "1", "first"), true))
	f.onFirstView = func(string) {
		require.NoError(t, m.WriteOne("ns/a", clientcache.TransactionTypeUpdate, appPod("a", "2", "between"), true))
	}
	require.NoError(t, m.AddIndexers(clientcache.Indexers{"app2": byApp}))
	require.Nil(t, f.onFirstView, "the hook ran")
	assert.Empty(t, f.underLock)
	keys, err := m.IndexKeys("app2", "between")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/a"}, keys)
	keys, err = m.IndexKeys("app2", "first")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/b"}, keys)
}
