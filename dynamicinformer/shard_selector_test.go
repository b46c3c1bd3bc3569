package dynamicinformer

import (
	"fmt"
	"sort"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/openinformer/cache/internal/factorytest"
)

// shardClient returns a fake client holding 20 deployments and the sorted
// keys of those selector matches, checking that it splits them.
func shardClient(t *testing.T, selector apisharding.Selector) (*dynamicfake.FakeDynamicClient, []string) {
	t.Helper()
	var objs []runtime.Object
	var want []string
	for i := range 20 {
		d := &unstructured.Unstructured{}
		d.SetAPIVersion("apps/v1")
		d.SetKind("Deployment")
		d.SetNamespace("ns")
		d.SetName(fmt.Sprintf("d%d", i))
		d.SetUID(types.UID(fmt.Sprintf("%c-uid", 'a'+i)))
		objs = append(objs, d)
		if ok, err := selector.Matches(d); err != nil {
			t.Fatal(err)
		} else if ok {
			want = append(want, "ns/"+d.GetName())
		}
	}
	if len(want) == 0 || len(want) == len(objs) {
		t.Fatalf("the selector should split the deployments, selects %d of %d", len(want), len(objs))
	}
	sort.Strings(want)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{deployments: "DeploymentList"}, objs...)
	return client, want
}

// On either minor, the factory's informers keep only the objects the
// selector matches (the fake answers without ShardInfo: filtered on the
// client); an informer's own SetShardSelector before Start replaces the
// factory's, and after Start is refused.
func TestWithShardSelectorRestrictsTheFactorysInformers(t *testing.T) {
	defer goleak.VerifyNone(t)
	client, want := shardClient(t, factorytest.LowHalf)
	keys, err := factorytest.CachedKeys(t, NewDynamicSharedInformerFactoryWithOptions(client, 0, WithShardSelector(factorytest.LowHalf)), deployments, nil)
	factorytest.AssertKeys(t, want, keys)
	if err == nil || err.Error() != "informer has already started" {
		t.Errorf("SetShardSelector after Start = %v, want informer has already started", err)
	}
	client, want = shardClient(t, factorytest.HighHalf)
	keys, _ = factorytest.CachedKeys(t, NewDynamicSharedInformerFactoryWithOptions(client, 0, WithShardSelector(factorytest.LowHalf)), deployments, factorytest.HighHalfBeforeStart(deployments))
	factorytest.AssertKeys(t, want, keys)
}
