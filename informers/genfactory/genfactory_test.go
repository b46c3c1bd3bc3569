package genfactory

import (
	"path/filepath"
	"testing"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	build "github.com/openinformer/cache/internal/informerbuild"
	"github.com/openinformer/cache/sharding"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var foos = schema.GroupVersionResource{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"}

// The Builder gives what the generated constructor passes (resync,
// indexers, identity) the factory's options: selector, snapshot file
// scoped by the factory's namespace and tweak, then the adjust functions
// in order, which see all of it.
func TestBuilderAddsTheFactoryOptions(t *testing.T) {
	dir := t.TempDir()
	var o Options
	o.SetSnapshots(dir, "v2")
	o.SetShardSelector(apisharding.Everything())
	var seen []cache.SharedIndexInformerOptions
	for range 2 {
		o.AddInformerOptions(func(obj runtime.Object, opts *cache.SharedIndexInformerOptions) {
			seen = append(seen, *opts)
			opts.StripManagedFields = true
		})
	}
	b := o.Builder("ns", func(lo *metav1.ListOptions) { lo.LabelSelector = "b=2,a=1" }, nil)
	lw := fake.MustNew(fake.Options{Object: &corev1.Pod{}})
	given := cache.SharedIndexInformerOptions{ResyncPeriod: 7, Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}}
	if b.NewSharedIndexInformerWithOptions(foos, lw, &corev1.Pod{}, given) == nil {
		t.Fatal("no informer")
	}
	if len(seen) != 2 || seen[1].StripManagedFields != true {
		t.Fatalf("adjust functions saw %+v, want two in order", seen)
	}
	got := seen[0]
	scope := cache.SnapshotScope{Namespace: "ns", LabelSelector: "a=1,b=2"}
	if want := filepath.Join(dir, build.SnapshotFileName(foos, scope, "", "v2")); got.Snapshot == nil || got.Snapshot.Path != want {
		t.Errorf("snapshot %+v, want path %s", got.Snapshot, want)
	}
	if got.ResyncPeriod != 7 || len(got.Indexers) != 1 || got.ShardSelector == nil {
		t.Errorf("options %+v lost the constructor's resync or indexers, or the selector", got)
	}
}

// A factory's selector (client-go v0.38's generated field) wins over
// SetShardSelector's; WithShard's shard function gets the example object.
func TestBuilderSelectorAndShard(t *testing.T) {
	var o Options
	o.SetShardSelector(apisharding.Everything())
	var asked runtime.Object
	o.SetShard(func(obj runtime.Object) *sharding.Shard { asked = obj; return &sharding.Shard{Index: 1, Count: 2} })
	factorySelector := apisharding.Everything()
	b := o.Builder("", nil, factorySelector)
	if b.selector != factorySelector {
		t.Error("the factory's own selector was not used")
	}
	obj := &corev1.Pod{}
	b.NewSharedIndexInformerWithOptions(foos, fake.MustNew(fake.Options{Object: obj}), obj, cache.SharedIndexInformerOptions{})
	if asked != obj {
		t.Errorf("shard function asked about %v, want the example object", asked)
	}
}

type factory struct{ b *Builder }

func (f factory) OpenInformerBuilder() *Builder { return f.b }

// A constructor called with no factory gets a nil Builder and builds as
// the generated code would; Of finds a factory's Builder.
func TestNilBuilderAndOf(t *testing.T) {
	var b *Builder
	if b.NewSharedIndexInformerWithOptions(foos, fake.MustNew(fake.Options{Object: &corev1.Pod{}}), &corev1.Pod{}, cache.SharedIndexInformerOptions{}) == nil {
		t.Error("a nil Builder built no informer")
	}
	var o Options
	want := o.Builder("", nil, nil)
	if Of(factory{want}) != want || Of(struct{}{}) != nil {
		t.Error("Of did not find the factory's Builder, or found one on a plain value")
	}
}
