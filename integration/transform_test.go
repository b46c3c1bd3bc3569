package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/integration/apiserver"
)

const byValueIndex = "by-value"

// stripManagedFields is the transform controllers commonly install.
func stripManagedFields(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	return u, nil
}

func byValue(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected %T", obj)
	}
	if v, ok := apiserver.WidgetValue(u); ok {
		return []string{strconv.FormatInt(v, 10)}, nil
	}
	return nil, nil
}

// TestTransformAndLateIndex: a transform set before start and an index added
// after sync give the same stores and index answers as the server's data.
func TestTransformAndLateIndex(t *testing.T) {
	expectOurGoroutinesGone(t)
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	client := srv.Dynamic()
	wl := workload{namespaces: testNamespaces, prefix: "idx", objects: scaled(150), writers: 4, updates: 1}
	wl.run(t, client)

	var runs []*informerRun
	for _, impl := range implementations {
		runs = append(runs, startInformerWith(t, srv, impl, informerSetup{configure: func(i clientcache.SharedIndexInformer) error {
			return i.SetTransform(stripManagedFields)
		}}))
	}
	for _, run := range runs {
		if err := run.informer.AddIndexers(clientcache.Indexers{byValueIndex: byValue}); err != nil {
			t.Fatalf("%s: add index after sync: %v", run.impl.name, err)
		}
	}
	workload{namespaces: testNamespaces, prefix: "idx2", objects: scaled(60), writers: 4, updates: 2, deleteEvery: 3}.run(t, client)
	churn(t, client)
	waitConverged(t, client, runs)

	want := serverValueIndex(t, client)
	for _, run := range runs {
		for _, obj := range run.informer.GetStore().List() {
			if mf := obj.(*unstructured.Unstructured).GetManagedFields(); len(mf) != 0 {
				t.Fatalf("%s: transform did not run on %s", run.impl.name, widgetKey(obj.(*unstructured.Unstructured)))
			}
		}
		indexer := run.informer.GetIndexer()
		values := indexer.ListIndexFuncValues(byValueIndex)
		slices.Sort(values)
		if !slices.Equal(values, sortedKeysOf(want)) {
			t.Errorf("%s: index values %v, server has %v", run.impl.name, values, sortedKeysOf(want))
		}
		for value, keys := range want {
			got, err := indexer.IndexKeys(byValueIndex, value)
			slices.Sort(got)
			if err != nil || !slices.Equal(got, keys) {
				t.Errorf("%s: IndexKeys(%s) = %v, %v; server has %v", run.impl.name, value, got, err, keys)
			}
			objs, err := indexer.ByIndex(byValueIndex, value)
			if err != nil || len(objs) != len(keys) {
				t.Errorf("%s: ByIndex(%s) gave %d objects, %v; server has %d", run.impl.name, value, len(objs), err, len(keys))
			}
		}
	}
}

// serverValueIndex maps spec.value to the sorted keys of the widgets with it.
func serverValueIndex(t *testing.T, client dynamic.Interface) map[string][]string {
	t.Helper()
	list, err := client.Resource(apiserver.WidgetGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 || len(list.Items[0].GetManagedFields()) == 0 {
		t.Fatal("server widgets carry no managedFields: the transform check would be vacuous")
	}
	out := map[string][]string{}
	for i := range list.Items {
		if v, ok := apiserver.WidgetValue(&list.Items[i]); ok {
			value := strconv.FormatInt(v, 10)
			out[value] = append(out[value], widgetKey(&list.Items[i]))
		}
	}
	for _, keys := range out {
		slices.Sort(keys)
	}
	return out
}

func sortedKeysOf(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
