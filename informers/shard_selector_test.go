package informers

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	cache "github.com/openinformer/cache"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// halfByUID selects the lower half of the UID hash space.
var halfByUID = apisharding.NewSelector(apisharding.ShardRangeRequirement{
	Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000",
})

// shardPods returns 20 pods and the sorted keys of those halfByUID selects.
func shardPods(t *testing.T) ([]runtime.Object, []string) {
	var objs []runtime.Object
	var want []string
	for i := range 20 {
		p := pod("ns", fmt.Sprintf("p%d", i), nil)
		p.UID = types.UID(fmt.Sprintf("%c-uid", 'a'+i)) // first bytes move FNV-1a's high bits most
		objs = append(objs, p)
		if ok, err := halfByUID.Matches(p); err != nil {
			t.Fatal(err)
		} else if ok {
			want = append(want, "ns/"+p.Name)
		}
	}
	sort.Strings(want)
	if len(want) == 0 || len(want) == len(objs) {
		t.Fatalf("the selector should split the pods, selects %d of %d", len(want), len(objs))
	}
	return objs, want
}

// syncedKeys starts the factory, waits for its caches and returns
// informer's sorted keys.
func syncedKeys(t *testing.T, f interface {
	Start(<-chan struct{})
	Shutdown()
	WaitForCacheSync(<-chan struct{}) map[reflect.Type]bool
}, informer cache.SharedIndexInformer) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(func() { cancel(); f.Shutdown() })
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	keys := informer.GetStore().ListKeys()
	sort.Strings(keys)
	return keys
}

// Client-go v0.38's WithShardSelector: every informer the factory hands
// out, its own and those of a caller's newFunc, keeps only selected objects
// (the fake clientset answers without ShardInfo, so they are filtered on
// the client).
func TestWithShardSelectorRestrictsEveryInformer(t *testing.T) {
	defer goleak.VerifyNone(t)
	objs, want := shardPods(t)
	t.Run("built by the factory", func(t *testing.T) {
		f := NewSharedInformerFactoryWithOptions(fake.NewClientset(objs...), 0, WithShardSelector(halfByUID))
		informer := f.Core().V1().Pods().Informer()
		assertKeys(t, want, syncedKeys(t, f, informer))
	})
	t.Run("a caller's newFunc", func(t *testing.T) {
		f := NewSharedInformerFactoryWithOptions(fake.NewClientset(objs...), 0, WithShardSelector(halfByUID))
		informer := f.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			lw := &cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					return c.CoreV1().Pods("").List(ctx, o)
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					return c.CoreV1().Pods("").Watch(ctx, o)
				},
			}
			return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, c), &corev1.Pod{}, resync, cache.Indexers{})
		})
		assertKeys(t, want, syncedKeys(t, f, informer))
	})
}

func assertKeys(t *testing.T, want, got []string) {
	t.Helper()
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("cached %v, want %v", got, want)
	}
}
