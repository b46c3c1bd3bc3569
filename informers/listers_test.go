package informers

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	appsv1listers "k8s.io/client-go/listers/apps/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"

	cache "github.com/openinformer/cache"
)

const ourInformersPkg = ourPkg + "/informers"

// Every typed accessor's lister, and its namespace lister where the
// resource is namespaced, is ours: client-go's generated listers would
// list through client-go's ListAllByNamespace, which reads every object
// of the namespace before it matches the selector.
func TestEveryTypedAccessorListerIsOurs(t *testing.T) {
	f := reflect.ValueOf(NewSharedInformerFactory(fake.NewClientset(), 0))
	count := 0
	for group := range accessors(f) {
		for version := range accessors(group) {
			for res := range accessors(version) {
				name := group.Type().String() + "/" + version.Type().String() + "/" + res.Type().String()
				lister := res.MethodByName("Lister").Call(nil)[0].Elem()
				if lister.Type().PkgPath() != ourInformersPkg {
					t.Errorf("%s: lister %v is not ours", name, lister.Type())
				}
				for i := range lister.NumMethod() {
					m := lister.Type().Method(i)
					if m.Type.NumIn() == 2 && m.Type.In(1).Kind() == reflect.String && strings.HasSuffix(m.Type.Out(0).Name(), "NamespaceLister") {
						ns := lister.Method(i).Call([]reflect.Value{reflect.ValueOf("ns")})[0].Elem()
						if ns.Type().PkgPath() != ourInformersPkg {
							t.Errorf("%s: namespace lister %v is not ours", name, ns.Type())
						}
					}
				}
				count++
			}
		}
	}
	assert.Equal(t, len(resourceGVRs()), count, "typed accessors walked")
}

// fill fills the informers's store of the factory f with pods,
// replica sets and nodes, as a sync would.
func fill(t *testing.T, f SharedInformerFactory) {
	t.Helper()
	pods := f.Core().V1().Pods().Informer().GetStore()
	rss := f.Apps().V1().ReplicaSets().Informer().GetStore()
	nodes := f.Core().V1().Nodes().Informer().GetStore()
	for i := range 30 {
		ns := fmt.Sprint("ns", i%3)
		lbls := map[string]string{"app": []string{"a", "b", "c"}[i%3], "tier": []string{"x", "y"}[i%2]}
		require.NoError(t, pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("p", i), Labels: lbls, ResourceVersion: "1"}}))
		require.NoError(t, nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i), Labels: lbls, ResourceVersion: "1"}}))
		if i < 6 {
			require.NoError(t, rss.Add(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("rs", i), ResourceVersion: "1"},
				Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": lbls["app"]}}}}))
		}
	}
}

// Our listers answer as client-go's on the same store, in the default and
// the compact mode: lists (nil when empty), namespace lists, Get and its
// NotFound, and the expansion methods.
func TestTypedListersAnswerAsClientGo(t *testing.T) {
	modes := map[string][]SharedInformerOption{
		"default": nil,
		"compact": {WithInformerOptions(func(_ runtime.Object, o *cache.SharedIndexInformerOptions) {
			o.Compact = &cache.CompactOptions{}
		})},
	}
	for name, opts := range modes {
		t.Run(name, func(t *testing.T) {
			f := NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0, opts...)
			fill(t, f)
			pods := f.Core().V1().Pods()
			theirPods := corev1listers.NewPodLister(pods.Informer().GetIndexer())
			nodes := f.Core().V1().Nodes()
			theirNodes := corev1listers.NewNodeLister(nodes.Informer().GetIndexer())
			for _, s := range []string{"", "app=a", "app=none", "tier=x,app in (b,c)", "!tier"} {
				sel, err := labels.Parse(s)
				require.NoError(t, err)
				assertSameList(t, s, func() (any, error) { return theirPods.List(sel) }, func() (any, error) { return pods.Lister().List(sel) })
				assertSameList(t, s, func() (any, error) { return theirNodes.List(sel) }, func() (any, error) { return nodes.Lister().List(sel) })
				for _, ns := range []string{"ns0", "ns2", "none"} {
					assertSameList(t, ns+" "+s, func() (any, error) { return theirPods.Pods(ns).List(sel) }, func() (any, error) { return pods.Lister().Pods(ns).List(sel) })
				}
			}
			for _, n := range []string{"p3", "p4", "missing"} {
				want, wantErr := theirPods.Pods("ns0").Get(n)
				got, gotErr := pods.Lister().Pods("ns0").Get(n)
				assert.Equal(t, want, got, n)
				assert.Equal(t, wantErr, gotErr, n)
			}
			want, wantErr := theirNodes.Get("missing")
			got, gotErr := nodes.Lister().Get("missing")
			assert.Equal(t, want, got)
			assert.Equal(t, wantErr, gotErr)

			theirRS := appsv1listers.NewReplicaSetLister(f.Apps().V1().ReplicaSets().Informer().GetIndexer())
			pod, err := pods.Lister().Pods("ns1").Get("p1")
			require.NoError(t, err)
			wantRS, wantErr := theirRS.GetPodReplicaSets(pod)
			gotRS, gotErr := f.Apps().V1().ReplicaSets().Lister().GetPodReplicaSets(pod)
			assert.ElementsMatch(t, wantRS, gotRS)
			assert.Equal(t, wantErr, gotErr)
		})
	}
}

// assertSameList compares two lists' items (in any order: stores list in
// their own), nil-ness and errors.
func assertSameList(t *testing.T, what string, theirs, ours func() (any, error)) {
	t.Helper()
	want, wantErr := theirs()
	got, gotErr := ours()
	assert.Equal(t, wantErr, gotErr, what)
	assert.ElementsMatch(t, want, got, what)
	assert.Equal(t, reflect.ValueOf(want).IsNil(), reflect.ValueOf(got).IsNil(), "nil list: %s", what)
}

// A compact factory's pod lister decodes only the pods it returns: the
// matches of a label selector are fresh decodes (no hot cache), the
// others never leave the store.
func TestTypedListerSelectsBeforeDecoding(t *testing.T) {
	f := NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0, WithInformerOptions(func(_ runtime.Object, o *cache.SharedIndexInformerOptions) {
		o.Compact = &cache.CompactOptions{}
	}))
	fill(t, f)
	lister := f.Core().V1().Pods().Lister()
	a := labels.SelectorFromSet(labels.Set{"app": "a"})
	first, err := lister.Pods("ns0").List(a)
	require.NoError(t, err)
	require.Len(t, first, 10)
	second, err := lister.Pods("ns0").List(a)
	require.NoError(t, err)
	for i := range first {
		assert.NotSame(t, first[i], second[i], "each list decodes its matches afresh")
	}
	none := testing.AllocsPerRun(20, func() {
		_, _ = lister.Pods("ns1").List(labels.SelectorFromSet(labels.Set{"app": "none"}))
	})
	ten := testing.AllocsPerRun(20, func() {
		_, _ = lister.Pods("ns1").List(labels.SelectorFromSet(labels.Set{"app": "b"}))
	})
	t.Logf("allocations: %v matching nothing, %v matching the namespace's 10 pods", none, ten)
	assert.Less(t, none*2, ten, "a list matching nothing decodes nothing")
}
