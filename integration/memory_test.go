package integration

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/client-go/dynamic"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache"
	"github.com/openinformer/cache/integration/apiserver"
	"github.com/openinformer/cache/internal/fixtures"
)

// memoryVariants are the caches whose heap TestHeapPerCustomResource
// compares; the first is the reference of the ratios.
var memoryVariants = append(implementations[:len(implementations):len(implementations)],
	implementation{name: "openinformer compact", newInformer: compactInformer(-1)},
	implementation{name: "openinformer compact hot 1000", newInformer: compactInformer(cache.DefaultHotObjects)},
)

// compactInformer is an informer constructor with compact storage and a hot
// cache of hot objects (0 or negative: none).
func compactInformer(hot int) newInformerFunc {
	return func(lw clientcache.ListerWatcher, obj k8sruntime.Object, resync time.Duration, indexers clientcache.Indexers) clientcache.SharedIndexInformer {
		return cache.NewSharedIndexInformerWithOptions(lw, obj, cache.SharedIndexInformerOptions{
			ResyncPeriod: resync, Indexers: indexers, Compact: &cache.CompactOptions{HotObjects: hot},
		})
	}
}

// TestHeapPerCustomResource measures what each cache keeps per realistic
// custom resource (about 5.7 KB of JSON), as the API server sends it: each informer syncs
// alone, is stopped, and its store is measured as the heap that dropping the
// informer frees (so the API server's share, in the same process, is not
// counted). Rounds alternate the order; the lowest figure of each is kept.
func TestHeapPerCustomResource(t *testing.T) {
	measureHeapPerWidget(t, scaled(1000), fixtures.CustomResource)
}

// TestHeapPerSmallCustomResource is TestHeapPerCustomResource for the small
// custom resources of fixtures.SmallCustomResource (about 1.9 KB of JSON
// and 1.4 KB of CBOR as served), where what a cache keeps per entry beside
// the object's bytes is a larger share. Five times as many: each is small.
func TestHeapPerSmallCustomResource(t *testing.T) {
	measureHeapPerWidget(t, scaled(5000), fixtures.SmallCustomResource)
}

// measureHeapPerWidget creates n widgets carrying the content of
// fixture(1, i) and logs, per cache of memoryVariants, the heap it keeps
// per widget, lowest of two rounds in alternating order.
func measureHeapPerWidget(t *testing.T, n int, fixture func(seed uint64, i int) *unstructured.Unstructured) {
	expectOurGoroutinesGone(t)
	const rounds = 2
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	client := srv.Dynamic()
	size := createFixtureWidgets(t, client, n, fixture)

	best := make([]uint64, len(memoryVariants))
	for round := range rounds {
		for i := range memoryVariants {
			if round%2 == 1 {
				i = len(memoryVariants) - 1 - i
			}
			held := heapHeldByInformer(t, srv, memoryVariants[i], n)
			if round == 0 || held < best[i] {
				best[i] = held
			}
		}
	}
	t.Logf("%d widgets, %d bytes of JSON and %d of CBOR each on average; heap held per widget, lowest of %d rounds:",
		n, size.json/n, size.cbor/n, rounds)
	for i, v := range memoryVariants {
		t.Logf("%-32s %8d B  %.3fx", v.name, best[i]/uint64(n), ratio(float64(best[i]), float64(best[0])))
	}
	// Issue 17's goal for unstructured custom resources, with a wide margin
	// (measured 0.13-0.14x): heap figures in a shared process are noisy.
	if r := ratio(float64(best[2]), float64(best[0])); r > 0.4 {
		t.Errorf("compact mode holds %.3fx client-go's heap per custom resource, want <= 0.4x", r)
	}
}

// widgetSizes are the total sizes of widgets as the server returned them.
type widgetSizes struct{ json, cbor int }

// createFixtureWidgets creates n widgets carrying the labels, annotations, spec
// and status of fixture(1, i) (the Widget CRD keeps unknown fields under
// spec only, so the status goes there too), and returns their total size.
func createFixtureWidgets(t *testing.T, client dynamic.Interface, n int, fixture func(seed uint64, i int) *unstructured.Unstructured) widgetSizes {
	t.Helper()
	const writers = 8
	sizes := make([]widgetSizes, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				size, err := createFixtureWidget(client, fixture(1, i), i)
				if err != nil {
					t.Errorf("widget %d: %v", i, err)
					return
				}
				sizes[w].json += size.json
				sizes[w].cbor += size.cbor
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var total widgetSizes
	for _, s := range sizes {
		total.json += s.json
		total.cbor += s.cbor
	}
	return total
}

func createFixtureWidget(client dynamic.Interface, cr *unstructured.Unstructured, i int) (widgetSizes, error) {
	ns := fixtures.NamespaceName(i)
	w := apiserver.NewWidget(ns, cr.GetName(), int64(i))
	spec := maps.Clone(cr.Object["spec"].(map[string]any))
	spec["value"] = int64(i)
	spec["report"] = cr.Object["status"]
	w.Object["spec"] = spec
	w.SetLabels(cr.GetLabels())
	w.SetAnnotations(cr.GetAnnotations())
	created, err := client.Resource(apiserver.WidgetGVR).Namespace(ns).Create(context.Background(), w, metav1.CreateOptions{FieldManager: "shop-operator"})
	if err != nil {
		return widgetSizes{}, err
	}
	data, err := created.MarshalJSON()
	if err != nil {
		return widgetSizes{}, err
	}
	cbor, err := direct.Marshal(created.Object)
	return widgetSizes{json: len(data), cbor: len(cbor)}, err
}

// heapHeldByInformer syncs impl's informer alone over the n widgets, stops
// it, and returns the heap that dropping it frees.
func heapHeldByInformer(t *testing.T, srv *apiserver.Server, impl implementation, n int) uint64 {
	t.Helper()
	client, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	informer := impl.newInformer(widgetListWatch(client, ""), &unstructured.Unstructured{}, 0,
		clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
	runUntilSynced(t, impl.name, informer)
	if got := len(informer.GetStore().ListKeys()); got != n {
		t.Fatalf("%s holds %d widgets, want %d", impl.name, got, n)
	}
	indexer := informer.GetIndexer() // the informer itself is garbage from here on
	runtime.GC()
	runtime.GC()
	with := heapAlloc()
	runtime.KeepAlive(indexer)
	runtime.GC()
	runtime.GC()
	return growth(with, heapAlloc())
}

// runUntilSynced runs informer until it has synced, then stops it and
// waits for Run to return.
func runUntilSynced(t *testing.T, name string, informer clientcache.SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	eventually(t, 2*time.Minute, fmt.Sprintf("%s synced", name), func() (bool, string) {
		return informer.HasSynced(), "not synced"
	})
}
