package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/integration/apiserver"
)

// checkListersAgree asks a generated-style GenericLister over each informer's
// indexer the same questions; the answers must match the server's state and
// each other, errors included.
func checkListersAgree(t *testing.T, runs []*informerRun, want widgetState) {
	t.Helper()
	var reference string
	for i, run := range runs {
		lister := clientcache.NewGenericLister(run.informer.GetIndexer(), apiserver.WidgetGVR.GroupResource())
		answers, all := listerAnswers(lister, want)
		if d := want.diff(all); d != "" {
			t.Errorf("%s lister List(everything) differs from server: %s", run.impl.name, d)
		}
		if i == 0 {
			reference = answers
		} else if answers != reference {
			t.Errorf("%s lister answers differ from %s:\n%s\nvs\n%s", run.impl.name, runs[0].impl.name, answers, reference)
		}
	}
}

// listerAnswers renders the lister's answers to a fixed set of questions.
func listerAnswers(lister clientcache.GenericLister, want widgetState) (string, widgetState) {
	var b strings.Builder
	everything, err := lister.List(labels.Everything())
	fmt.Fprintf(&b, "all: %s err=%v\n", renderObjects(everything), err)
	even, err := lister.List(labels.SelectorFromSet(labels.Set{"parity": "0"}))
	fmt.Fprintf(&b, "parity=0: %s err=%v\n", renderObjects(even), err)

	namespaces := map[string]bool{}
	keys := make([]string, 0, len(want))
	for key := range want {
		keys = append(keys, key)
		namespaces[strings.SplitN(key, "/", 2)[0]] = true
	}
	sort.Strings(keys)
	for _, ns := range append(sortedKeys(namespaces), "no-such-namespace") {
		objs, err := lister.ByNamespace(ns).List(labels.Everything())
		fmt.Fprintf(&b, "ns %s: %s err=%v\n", ns, renderObjects(objs), err)
		_, err = lister.ByNamespace(ns).Get("no-such-widget")
		fmt.Fprintf(&b, "ns %s get missing: err=%v\n", ns, err)
	}
	for i, key := range keys {
		if i%7 != 0 {
			continue
		}
		ns, name, _ := strings.Cut(key, "/")
		obj, err := lister.ByNamespace(ns).Get(name)
		fmt.Fprintf(&b, "get %s: %s err=%v\n", key, renderObjects([]runtime.Object{obj}), err)
		obj, err = lister.Get(key)
		fmt.Fprintf(&b, "get by key %s: %s err=%v\n", key, renderObjects([]runtime.Object{obj}), err)
	}
	all := widgetState{}
	for _, obj := range everything {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			all[widgetKey(u)] = parseRV(u)
		}
	}
	return b.String(), all
}

func renderObjects(objs []runtime.Object) string {
	out := make([]string, 0, len(objs))
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			out = append(out, fmt.Sprintf("%T", obj))
			continue
		}
		out = append(out, fmt.Sprintf("%s@%s", widgetKey(u), u.GetResourceVersion()))
	}
	sort.Strings(out)
	return fmt.Sprintf("%d %v", len(out), out)
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
