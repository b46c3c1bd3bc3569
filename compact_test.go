package cache

import (
	"fmt"
	"reflect"
	goruntime "runtime"
	"sort"
	"strconv"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/fanout"
	"github.com/openinformer/cache/internal/fixtures"
)

// compactByNode indexes pods by node, like a kubelet-facing controller.
func compactIndexers() Indexers {
	return Indexers{
		NamespaceIndex: MetaNamespaceIndexFunc,
		"node":         func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Spec.NodeName}, nil },
	}
}

// semanticByKey checks that got holds, key by key, objects equal to want's
// under equality.Semantic, and returns got's objects by key.
func semanticByKey(t *testing.T, what string, got, want []interface{}) map[string]interface{} {
	t.Helper()
	byKey := func(objs []interface{}) map[string]interface{} {
		m := map[string]interface{}{}
		for _, o := range objs {
			k, err := MetaNamespaceKeyFunc(o)
			require.NoError(t, err)
			m[k] = o
		}
		return m
	}
	g, w := byKey(got), byKey(want)
	require.Len(t, g, len(w), what)
	for k, o := range w {
		require.True(t, equality.Semantic.DeepEqual(o, g[k]), "%s: %s differs", what, k)
	}
	return g
}

// Every read of a compact Indexer, cold or hot, returns what the default
// Indexer returns, under equality.Semantic.
func TestCompactIndexerReadsEqualDefaultMode(t *testing.T) {
	pods := fixtures.Pods(3, 200)
	for _, hot := range []int{-1, 0, 16} {
		t.Run(fmt.Sprintf("hot %d", hot), func(t *testing.T) {
			decoded := NewIndexer(MetaNamespaceKeyFunc, compactIndexers())
			packed := NewCompactIndexer(MetaNamespaceKeyFunc, compactIndexers(), CompactOptions{HotObjects: hot})
			for _, p := range pods {
				require.NoError(t, decoded.Add(p))
				require.NoError(t, packed.Add(p))
			}
			for range 2 { // the second round reads what the first decoded
				semanticByKey(t, "List", packed.List(), decoded.List())
				for _, ns := range decoded.ListIndexFuncValues(NamespaceIndex) {
					want, err := decoded.ByIndex(NamespaceIndex, ns)
					require.NoError(t, err)
					got, err := packed.ByIndex(NamespaceIndex, ns)
					require.NoError(t, err)
					semanticByKey(t, "ByIndex "+ns, got, want)
				}
				want, err := decoded.Index("node", pods[7])
				require.NoError(t, err)
				got, err := packed.Index("node", pods[7])
				require.NoError(t, err)
				semanticByKey(t, "Index", got, want)
				for _, p := range pods[:20] {
					obj, ok, err := packed.Get(p)
					require.NoError(t, err)
					require.True(t, ok)
					require.True(t, equality.Semantic.DeepEqual(p, obj))
				}
			}
			assert.ElementsMatch(t, decoded.ListKeys(), packed.ListKeys())
			assert.ElementsMatch(t, decoded.ListIndexFuncValues("node"), packed.ListIndexFuncValues("node"))
		})
	}
}

// A cold read decodes a fresh object: mutating it does not change the
// cache. With the hot cache on, reading back what was written returns the
// very object, as the default mode does.
func TestCompactIndexerColdReadsAreFreshHotReadsShared(t *testing.T) {
	pod := newTestPod("ns", "a", "1", "app", "x")

	cold := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{}, CompactOptions{HotObjects: -1})
	require.NoError(t, cold.Add(pod))
	got, _, err := cold.GetByKey("ns/a")
	require.NoError(t, err)
	require.NotSame(t, pod, got)
	require.True(t, reflect.DeepEqual(pod, got), "a pod built like this one round-trips exactly")
	got.(*v1.Pod).Labels["app"] = "mutated"
	again, _, err := cold.GetByKey("ns/a")
	require.NoError(t, err)
	assert.Equal(t, "x", again.(*v1.Pod).Labels["app"], "the caller's mutation did not reach the cache")

	hot := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{}, CompactOptions{HotObjects: DefaultHotObjects})
	require.NoError(t, hot.Add(pod))
	got, _, err = hot.GetByKey("ns/a")
	require.NoError(t, err)
	assert.Same(t, pod, got)
}

// HotObjects' zero value means no hot cache, as a negative value does: a
// read back decodes a fresh object, and so does the next read of it (a hot
// cache of any size keeps the last decode). internal/form's test of the
// same name checks that the form has no hot cache at all.
func TestCompactHotObjectsZeroMeansNone(t *testing.T) {
	for _, hot := range []int{0, -1} {
		pod := newTestPod("ns", "a", "1")
		idx := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{}, CompactOptions{HotObjects: hot})
		require.NoError(t, idx.Add(pod))
		got, _, err := idx.GetByKey("ns/a")
		require.NoError(t, err)
		assert.NotSame(t, pod, got, "HotObjects %d", hot)
		again, _, err := idx.GetByKey("ns/a")
		require.NoError(t, err)
		assert.NotSame(t, got, again, "HotObjects %d: nothing kept the read's decode", hot)
	}
}

// The hot cache holds at most HotObjects objects; reads beyond it decode.
// (internal/form's TestCompactHotCacheIsBounded checks the cache's size.)
func TestCompactIndexerHotCacheIsBounded(t *testing.T) {
	idx := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{}, CompactOptions{HotObjects: 4})
	pods := make([]*v1.Pod, 10)
	added := make([]weak.Pointer[v1.Pod], len(pods))
	for i := range pods {
		pods[i] = newTestPod("ns", fmt.Sprint("p", i), "1")
		written := pods[i].DeepCopy()
		added[i] = weak.Make(written)
		require.NoError(t, idx.Add(written))
	}
	// The indexer keeps at most 4 of the objects it was given alive; an
	// evicted one nobody holds is decoded again (one still held would be
	// found again, see compact.HotCache's ghosts).
	goruntime.GC()
	same := 0
	for i, p := range pods {
		got, _, err := idx.Get(p)
		require.NoError(t, err)
		require.True(t, reflect.DeepEqual(p, got))
		if got == any(added[i].Value()) {
			same++
		}
	}
	assert.LessOrEqual(t, same, 4)
}

// Unstructured objects are kept as CBOR and come back exactly.
func TestCompactIndexerUnstructured(t *testing.T) {
	idx := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, CompactOptions{HotObjects: -1})
	for _, cr := range fixtures.CustomResources(5, 10) {
		require.NoError(t, idx.Add(cr))
		got, ok, err := idx.Get(cr)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, cr.GetUID(), got.(*unstructured.Unstructured).GetUID())
		require.True(t, equality.Semantic.DeepEqual(roundTripJSON(t, cr), got))
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w", "namespace": "ns"},
		"spec":     map[string]interface{}{"size": int64(3), "ratio": 0.5, "tags": []interface{}{"a", "b"}},
	}}
	require.NoError(t, idx.Add(obj))
	got, _, err := idx.GetByKey("ns/w")
	require.NoError(t, err)
	assert.True(t, reflect.DeepEqual(obj, got))
}

// roundTripJSON is obj as a client decodes it from the API server's JSON.
func roundTripJSON(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	data, err := obj.MarshalJSON()
	require.NoError(t, err)
	out := &unstructured.Unstructured{}
	require.NoError(t, out.UnmarshalJSON(data))
	return out
}

// An object compact storage cannot keep is refused alone, with an error
// that names it; the store is otherwise unchanged.
func TestCompactIndexerRefusesOnlyThatObject(t *testing.T) {
	idx := NewCompactIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, CompactOptions{})
	good := newTestPod("ns", "good", "1")
	require.NoError(t, idx.Add(good))

	foreign := newTestPod("ns", "foreign", "2")
	foreign.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
	err := idx.Add(foreign)
	require.ErrorIs(t, err, compact.ErrKind)
	assert.Contains(t, err.Error(), "ns/foreign")

	kindless := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": "u", "namespace": "ns"}}}
	require.ErrorIs(t, idx.Add(kindless), compact.ErrKind)

	// An update that cannot be kept leaves the stored object as it was.
	badUpdate := good.DeepCopy()
	badUpdate.TypeMeta = foreign.TypeMeta
	require.ErrorIs(t, idx.Update(badUpdate), compact.ErrKind)
	got, ok, err := idx.GetByKey("ns/good")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "1", got.(*v1.Pod).ResourceVersion)
	assert.Equal(t, []string{"ns/good"}, idx.ListKeys())
	keys, err := idx.IndexKeys(NamespaceIndex, "ns")
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/good"}, keys)

	// Replace keeps every object it can and names the one it cannot.
	err = idx.Replace([]interface{}{newTestPod("ns", "b", "3"), foreign, newTestPod("ns", "c", "3")}, "3")
	require.ErrorIs(t, err, compact.ErrKind)
	assert.Contains(t, err.Error(), "ns/foreign")
	keys = idx.ListKeys()
	sort.Strings(keys)
	assert.Equal(t, []string{"ns/b", "ns/c"}, keys)
}

// Compact storage keeps API objects only.
func TestCompactIndexerRefusesNonAPIObjects(t *testing.T) {
	idx := NewCompactIndexer(func(obj interface{}) (string, error) { return fmt.Sprint(obj), nil }, Indexers{}, CompactOptions{})
	err := idx.Add("just a string")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runtime.Object")
	assert.Empty(t, idx.ListKeys())
}

// In an informer, an object compact storage refuses is reported and left
// out; every other object is cached and notified.
func TestCompactInformerRefusesOnlyThatObject(t *testing.T) {
	objErrEachMode(t, func(t *testing.T, mode objErrMode, reported *reportedErrors) {
		srv := newDiffServer(mode.watchList)
		srv.apply(watch.Added, "x", "foreign", "yes")
		srv.apply(watch.Added, "y")
		provider := &objectErrorProvider{}
		inf := NewSharedIndexInformerWithOptions(srv, &v1.Pod{}, SharedIndexInformerOptions{
			Identifier: storeReservedID(t), InformerMetricsProvider: provider, Compact: &CompactOptions{},
		})
		require.NoError(t, inf.SetTransform(func(obj interface{}) (interface{}, error) {
			if p, ok := obj.(*v1.Pod); ok && p.Labels["foreign"] == "yes" {
				p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
			}
			return obj, nil
		}))
		events := newObjErrEvents()
		_, err := inf.AddEventHandler(events)
		require.NoError(t, err)
		stop := informerTestRun(inf)
		defer stop()
		informerTestWait(t, "sync", inf.HasSyncedChecker())
		events.waitFor(t, "add ns/y")
		// An object queued after the refusal comes out only once the
		// refusal has been reported.
		srv.apply(watch.Added, "after-list")
		events.waitFor(t, "add ns/after-list")
		assert.Equal(t, []string{"ns/after-list", "ns/y"}, storeSortedKeys(inf.GetStore()))
		got := reported.take()
		require.Len(t, got, 1)
		assert.Contains(t, got[0], "ns/x")
		assert.Contains(t, got[0], compact.ErrKind.Error())
		assert.Equal(t, 1, provider.errors.count())

		srv.apply(watch.Added, "z", "foreign", "yes")
		srv.apply(watch.Added, "v")
		events.waitFor(t, "add ns/v")
		srv.apply(watch.Added, "after-watch")
		events.waitFor(t, "add ns/after-watch")
		assert.Equal(t, []string{"ns/after-list", "ns/after-watch", "ns/v", "ns/y"}, storeSortedKeys(inf.GetStore()))
		events.mu.Lock()
		assert.False(t, events.seen["add ns/x"] || events.seen["add ns/z"], "a refused object is never notified")
		events.mu.Unlock()
		got = reported.take()
		require.Len(t, got, 1)
		assert.Contains(t, got[0], "ns/z")
		assert.Equal(t, 2, provider.errors.count())
	})
}

// An informer in compact mode caches objects equal to the default mode's,
// exactly: objects from the API server round-trip under reflect.DeepEqual.
func TestCompactInformerCachesWhatTheDefaultModeCaches(t *testing.T) {
	pods := fixtures.Objects(fixtures.Pods(9, 300))
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, Objects: pods})
	decoded := NewSharedIndexInformer(srv, &v1.Pod{}, 0, Indexers{})
	packed := NewSharedIndexInformerWithOptions(srv, &v1.Pod{}, SharedIndexInformerOptions{Compact: &CompactOptions{HotObjects: -1}})
	defer goleak.VerifyNone(t)
	for _, inf := range []SharedIndexInformer{decoded, packed} {
		stop := informerTestRun(inf)
		defer stop()
		informerTestWait(t, "sync", inf.HasSyncedChecker())
	}
	byKey := semanticByKey(t, "List", decoded.GetStore().List(), packed.GetStore().List())
	for key, obj := range byKey {
		got, ok, err := packed.GetStore().GetByKey(key)
		require.NoError(t, err)
		require.True(t, ok)
		wire := wireCopy(t, obj.(*v1.Pod))
		require.True(t, reflect.DeepEqual(wire, got), "%s", key)
	}
}

// wireCopy is pod as a client decodes it from the API server: what an
// informer fed by a real server holds.
func wireCopy(t *testing.T, pod *v1.Pod) runtime.Object {
	codec, err := compact.NewCodec(pod, compact.Options{Format: compact.JSON})
	require.NoError(t, err)
	data, err := codec.Encode(pod)
	require.NoError(t, err)
	out, err := codec.Decode(data)
	require.NoError(t, err)
	return out
}

// An informer's update of an object whose old version is cold (not in the
// hot cache) costs, beyond encoding the new object and decoding the old
// one, one allocation: what the map holds. Measured apart from the codec,
// whose own figures may change. The write's buffers come from a pool, which
// the race detector sometimes empties.
func TestCompactUpdateAllocations(t *testing.T) {
	const n = 64
	perUpdate, encode := compactUpdateAllocs(t, n, 16)
	pod := tinyPodVersions(1)[0][0]
	codec, err := compact.NewCodec(pod, compact.Options{})
	require.NoError(t, err)
	data, err := codec.Encode(pod)
	require.NoError(t, err)
	decode := testing.AllocsPerRun(100, func() { _, _ = codec.Decode(data) })
	t.Logf("allocations per update %.1f: encode %.1f, decode %.1f, the store's own %.1f", perUpdate, encode, decode, perUpdate-encode-decode)
	assert.LessOrEqual(t, perUpdate-encode-decode, poolSlack, "the store's own allocations per update: none, the map holds the encoding itself")
}

// One compact Indexer keeps objects of several Go types, each read back
// through its own codec; the map holds each object as its encoding alone.
func TestCompactIndexerMixedTypes(t *testing.T) {
	// The recorder sees what the compact form gives the map to hold.
	held := map[string]any{}
	idx := compactRecordingHeld(func(key string, h any) { held[key] = h })
	pod := newTestPod("ns", "p", "1", "app", "x")
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", ResourceVersion: "2"}, Data: map[string]string{"k": "v"}}
	cr := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w", "namespace": "ns"},
	}}
	for _, obj := range []runtime.Object{pod, cm, cr} {
		require.NoError(t, idx.Add(obj))
	}
	for key, want := range map[string]runtime.Object{"ns/p": pod, "ns/c": cm, "ns/w": cr} {
		got, ok, err := idx.GetByKey(key)
		require.NoError(t, err)
		require.True(t, ok)
		require.NotSame(t, want, got, "decoded")
		assert.True(t, reflect.DeepEqual(want, got), "%s round-trips", key)
	}
	got, err := idx.ByIndex(NamespaceIndex, "ns")
	require.NoError(t, err)
	assert.Len(t, got, 3)
	e, ok := held["ns/c"].(compact.Encoding)
	require.True(t, ok, "the map holds a %T", held["ns/c"])
	assert.Equal(t, uint32(1), compact.TagOf(e), "the second type's codec")
}

// tinyPodVersions are two versions of n small pods, as in benchratio's
// events case.
func tinyPodVersions(n int) [2][]*v1.Pod {
	var out [2][]*v1.Pod
	for v := range out {
		out[v] = make([]*v1.Pod, n)
		for i := range out[v] {
			out[v][i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns-" + strconv.Itoa(i%100), Name: "pod-" + strconv.Itoa(i),
				ResourceVersion: strconv.Itoa(v + 2), Labels: map[string]string{"app": strconv.Itoa(i % 10)},
			}}
		}
	}
	return out
}

// benchStoreEvents is the store's share of benchratio's
// compact/events case: one update per op, cycling over 50k small pods, so
// that with the default hot cache every old object is cold.
func benchStoreEvents(b *testing.B, opts *CompactOptions) {
	const n = 50000
	pods := tinyPodVersions(n)
	s := NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc}, compactStoreOptions(opts)...).(*cache)
	for _, p := range pods[0] {
		if err := s.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	var changes []fanout.Notification
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		d := [1]Delta{{Type: Updated, Object: pods[(i/n+1)%2][i%n]}}
		var err error
		changes, _, err = s.applyDeltas(d[:], false, changes[:0], nil)
		if err != nil || len(changes) != 1 {
			b.Fatal(err)
		}
	}
}

func BenchmarkStoreEventsDefault(b *testing.B) { benchStoreEvents(b, nil) }
func BenchmarkStoreEventsCompact(b *testing.B) {
	benchStoreEvents(b, &CompactOptions{HotObjects: DefaultHotObjects})
}
