package cache

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/keyparts"
)

func TestCompareObjectKeysMatchesKeyOrder(t *testing.T) {
	names := []ObjectName{
		NewObjectName("", "a"),
		NewObjectName("", "a/b"),
		NewObjectName("a", "b"),
		NewObjectName("a-b", "c"),
		NewObjectName("a", ""),
		NewObjectName("kube", "x"),
		NewObjectName("kube-system", "x"),
		NewObjectName("", ""),
		NewObjectName("ab", "c"),
		NewObjectName("a", "bc"),
		NewObjectName("", "kube-system/x"),
	}
	for _, x := range names {
		for _, y := range names {
			kx, ky := keyparts.Join(x.Namespace, x.Name), keyparts.Join(y.Namespace, y.Name)
			want := 0
			switch {
			case kx < ky:
				want = -1
			case kx > ky:
				want = 1
			}
			assert.Equal(t, want, keyparts.Parts{Namespace: x.Namespace, Name: x.Name}.Compare(keyparts.Parts{Namespace: y.Namespace, Name: y.Name}), "%q vs %q", kx, ky)
		}
	}
}

// TestF9_WatchListBufferMatchesStore feeds random initial streams to the
// buffer and to client-go's Store (what client-go's watch-list collects
// into) and requires the same result.
func TestF9_WatchListBufferMatchesStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	namespaces := []string{"", "a", "a-b", "kube", "kube-system"}
	podNames := []string{"x", "y", "z/w", "a", "b-c"}
	for round := 0; round < 300; round++ {
		var transform TransformFunc
		if round%2 == 1 {
			transform = func(obj interface{}) (interface{}, error) {
				p := obj.(*v1.Pod).DeepCopy()
				p.Labels = map[string]string{"t": "1"}
				return p, nil
			}
		}
		buf := newWatchListBuffer(transform)
		var opts []clientcache.StoreOption
		if transform != nil {
			opts = append(opts, clientcache.WithTransformer(clientcache.TransformFunc(transform)))
		}
		oracle := clientcache.NewStore(clientcache.DeletionHandlingMetaNamespaceKeyFunc, opts...)
		sorted := round%3 == 0
		for i := 0; i < 12; i++ {
			var pod *v1.Pod
			if sorted {
				pod = newTestPod("ns", string(rune('a'+i)), "1")
			} else {
				pod = newTestPod(namespaces[rng.IntN(len(namespaces))], podNames[rng.IntN(len(podNames))], "1")
				pod.ResourceVersion = string(rune('0' + i))
			}
			var obj runtime.Object = pod
			switch op := rng.IntN(10); {
			case sorted || op < 6:
				require.NoError(t, buf.add(obj))
				require.NoError(t, oracle.Add(obj))
			case op < 8:
				require.NoError(t, buf.update(obj))
				require.NoError(t, oracle.Update(obj))
			default:
				require.NoError(t, buf.delete(obj))
				require.NoError(t, oracle.Delete(obj))
			}
		}
		got := buf.finish()
		assert.Equal(t, watchListSnapshot(t, oracle.List()), watchListSnapshot(t, got), "round %d", round)
		if sorted {
			assert.Nil(t, buf.slot, "an in-order stream never needs an index")
		}
	}
}

func watchListSnapshot(t *testing.T, items []interface{}) []string {
	out := make([]string, 0, len(items))
	for _, obj := range items {
		p := obj.(*v1.Pod)
		out = append(out, keyparts.Join(p.Namespace, p.Name)+"@"+p.ResourceVersion+"/"+p.Labels["t"])
	}
	sort.Strings(out)
	return out
}

func TestF9_WatchListBufferRejectsObjectsWithoutMeta(t *testing.T) {
	buf := newWatchListBuffer(nil)
	err := buf.add((*v1.Pod)(nil))
	var keyErr KeyError
	assert.ErrorAs(t, err, &keyErr)
	assert.Empty(t, buf.finish())
}
