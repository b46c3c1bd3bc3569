package cache

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/keyparts"
)

func TestK1_MetaNamespaceKeyFunc(t *testing.T) {
	key, err := MetaNamespaceKeyFunc(ExplicitKey("a/b/c"))
	require.NoError(t, err)
	assert.Equal(t, "a/b/c", key)

	_, err = MetaNamespaceKeyFunc(42)
	require.EqualError(t, err, "object has no meta: object does not implement the Object interfaces")

	key, err = MetaNamespaceKeyFunc(newTestPod("ns", "p", "1"))
	require.NoError(t, err)
	assert.Equal(t, "ns/p", key)

	key, err = MetaNamespaceKeyFunc(newTestPod("", "node", "1"))
	require.NoError(t, err)
	assert.Equal(t, "node", key)

	key, err = MetaNamespaceKeyFunc(newTestPod("", "", "1"))
	require.NoError(t, err)
	assert.Equal(t, "", key)
}

func TestK2_DeletionHandlingKeyFunc(t *testing.T) {
	key, err := DeletionHandlingMetaNamespaceKeyFunc(DeletedFinalStateUnknown{Key: "ns/gone"})
	require.NoError(t, err)
	assert.Equal(t, "ns/gone", key)

	_, err = DeletionHandlingMetaNamespaceKeyFunc(&DeletedFinalStateUnknown{Key: "ns/gone"})
	require.Error(t, err, "a pointer to a tombstone is not special-cased")

	key, err = DeletionHandlingMetaNamespaceKeyFunc(newTestPod("ns", "p", "1"))
	require.NoError(t, err)
	assert.Equal(t, "ns/p", key)
}

func TestK3_SplitMetaNamespaceKey(t *testing.T) {
	for _, c := range []struct{ key, ns, name string }{
		{"", "", ""}, {"a", "", "a"}, {"ns/a", "ns", "a"}, {"/a", "", "a"}, {"ns/", "ns", ""},
	} {
		ns, name, err := SplitMetaNamespaceKey(c.key)
		require.NoError(t, err, c.key)
		assert.Equal(t, [2]string{c.ns, c.name}, [2]string{ns, name}, c.key)
	}
	for _, bad := range []string{"a/b/c", "//"} {
		ns, name, err := SplitMetaNamespaceKey(bad)
		require.EqualError(t, err, `unexpected key format: "`+bad+`"`)
		assert.Empty(t, ns+name)
	}
}

func TestK4_ObjectName(t *testing.T) {
	n := NewObjectName("ns", "p")
	assert.Equal(t, "ns/p", n.String())
	assert.Equal(t, "p", NewObjectName("", "p").String())
	ns, name := n.Parts()
	assert.Equal(t, [2]string{"ns", "p"}, [2]string{ns, name})

	parsed, err := ParseObjectName("ns/p")
	require.NoError(t, err)
	assert.Equal(t, n, parsed)
	_, err = ParseObjectName("a/b/c")
	require.Error(t, err)

	assert.Equal(t, n, NamespacedNameAsObjectName(types.NamespacedName{Namespace: "ns", Name: "p"}))
	assert.Equal(t, types.NamespacedName{Namespace: "ns", Name: "p"}, n.AsNamespacedName())

	got, err := ObjectToName(newTestPod("ns", "p", "1"))
	require.NoError(t, err)
	assert.Equal(t, n, got)
	_, err = ObjectToName(ExplicitKey("ns/p"))
	require.Error(t, err, "ObjectToName does not accept ExplicitKey")
	assert.Equal(t, n, MetaObjectToName(&metav1.ObjectMeta{Namespace: "ns", Name: "p"}))

	got, err = DeletionHandlingObjectToName(DeletedFinalStateUnknown{Key: "ns/p"})
	require.NoError(t, err)
	assert.Equal(t, n, got)
	_, err = DeletionHandlingObjectToName(DeletedFinalStateUnknown{Key: "a/b/c"})
	require.Error(t, err)
}

func TestK5_TombstoneIsAValueType(t *testing.T) {
	var obj interface{} = DeletedFinalStateUnknown{Key: "ns/p"}
	d, ok := obj.(DeletedFinalStateUnknown)
	require.True(t, ok)
	assert.Nil(t, d.Obj)
	_, isClientGo := obj.(clientcache.DeletedFinalStateUnknown)
	assert.True(t, isClientGo)
}

func TestK6_KeyError(t *testing.T) {
	inner := errors.New("boom")
	err := KeyError{Obj: "x", Err: inner}
	assert.Equal(t, "couldn't create key for object x: boom", err.Error())
	assert.ErrorIs(t, err, inner)
}

func TestK7_IndexFuncToKeyFuncAdapter(t *testing.T) {
	values := func(v []string, err error) KeyFunc {
		return IndexFuncToKeyFuncAdapter(func(interface{}) ([]string, error) { return v, err })
	}
	boom := errors.New("boom")
	_, err := values(nil, boom)(nil)
	assert.Same(t, boom, err)
	_, err = values([]string{"a", "b"}, nil)(nil)
	assert.EqualError(t, err, "too many keys: [a b]")
	_, err = values(nil, nil)(nil)
	assert.EqualError(t, err, "unexpected empty indexKeys")
	key, err := values([]string{"a"}, nil)(nil)
	require.NoError(t, err)
	assert.Equal(t, "a", key)
}

func TestK8_MetaNamespaceIndexFunc(t *testing.T) {
	vals, err := MetaNamespaceIndexFunc(newTestPod("ns", "p", "1"))
	require.NoError(t, err)
	assert.Equal(t, []string{"ns"}, vals)
	vals, err = MetaNamespaceIndexFunc(42)
	assert.Equal(t, []string{""}, vals)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "object has no meta: "))
	assert.Equal(t, "namespace", NamespaceIndex)
}

// FuzzSplitMetaNamespaceKey checks that splitting agrees with client-go and
// that a split key joins back to itself, through ParseObjectName too.
func FuzzSplitMetaNamespaceKey(f *testing.F) {
	for _, s := range []string{"", "a", "ns/a", "/a", "ns/", "a/b/c", "//", "ns//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		ns, name, err := SplitMetaNamespaceKey(key)
		wantNS, wantName, wantErr := clientcache.SplitMetaNamespaceKey(key)
		if ns != wantNS || name != wantName || (err == nil) != (wantErr == nil) {
			t.Fatalf("SplitMetaNamespaceKey(%q) = %q,%q,%v; client-go %q,%q,%v", key, ns, name, err, wantNS, wantName, wantErr)
		}
		if err != nil {
			if err.Error() != wantErr.Error() {
				t.Fatalf("error %q, client-go %q", err, wantErr)
			}
			return
		}
		on, perr := ParseObjectName(key)
		if perr != nil || on.Namespace != ns || on.Name != name {
			t.Fatalf("ParseObjectName(%q) = %v, %v", key, on, perr)
		}
		// "/a" splits to ("", "a"), which joins as "a".
		key = strings.TrimPrefix(key, "/")
		if joined := keyparts.Join(ns, name); joined != key || on.String() != key {
			t.Fatalf("%q split to %q,%q joins back as %q / %q", key, ns, name, joined, on.String())
		}
		if pod := (&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); ns != "" || !strings.Contains(name, "/") {
			if k, _ := MetaNamespaceKeyFunc(pod); k != keyparts.Join(ns, name) {
				t.Fatalf("MetaNamespaceKeyFunc = %q, joinKey = %q", k, keyparts.Join(ns, name))
			}
		}
	})
}

// lookup (the informer's write path) must agree with the key function for
// every kind of object, and reuse the stored key for an object already in
// the store instead of building one.
func TestStoreLookupAgreesWithKeyFuncAndReusesStoredKeys(t *testing.T) {
	long := strings.Repeat("n", 200)
	objs := []interface{}{
		newTestPod("ns", "a", "1"),
		newTestPod("", "cluster-scoped", "1"),
		newTestPod("ns", long, "1"), // longer than the stack buffer
		DeletedFinalStateUnknown{Key: "ns/a", Obj: newTestPod("ns", "a", "1")},
		ExplicitKey("ns/explicit"),
		"no meta",
		(*v1.Pod)(nil),
	}
	for name, fn := range map[string]KeyFunc{
		"ours":      DeletionHandlingMetaNamespaceKeyFunc,
		"client-go": clientcache.DeletionHandlingMetaNamespaceKeyFunc,
		"custom":    func(obj interface{}) (string, error) { return DeletionHandlingMetaNamespaceKeyFunc(obj) },
	} {
		t.Run(name, func(t *testing.T) {
			c := NewStore(fn).(*cache)
			require.NoError(t, c.Add(newTestPod("ns", "a", "0")))
			require.NoError(t, c.Add(newTestPod("ns", long, "0")))
			for _, obj := range objs {
				want, wantErr := c.keyOf(obj)
				key, prior, err := c.lookup(obj)
				if wantErr != nil {
					assert.Equal(t, wantErr, err)
					continue
				}
				require.NoError(t, err)
				assert.Equal(t, want, key)
				_, storedExists, _ := c.GetByKey(want)
				require.Equal(t, storedExists, prior.Existed(), want)
				// The prior is the one the store reads for the key: the stored
				// object itself, known, or an absent key's empty prior
				// (internal/store's TestPriorIsTheStoredObject). Priors are
				// compared whole, held values by identity.
				assert.True(t, prior == c.storage.ReadPrior(want), "the prior of %s is the store's", want)
			}
		})
	}
	c := NewStore(DeletionHandlingMetaNamespaceKeyFunc).(*cache)
	require.NoError(t, c.Add(newTestPod("ns", "a", "0")))
	update := newTestPod("ns", "a", "1")
	storedKey := c.ListKeys()[0]
	key, _, _ := c.lookup(update)
	assert.Equal(t, unsafe.StringData(storedKey), unsafe.StringData(key), "the stored key is reused")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _, _ = c.lookup(update) }), "an update builds no key")
}
