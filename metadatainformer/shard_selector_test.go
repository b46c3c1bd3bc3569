package metadatainformer

import (
	"fmt"
	"sort"
	"testing"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/openinformer/cache/internal/factorytest"
)

// shardClient returns a fake client holding 20 pods and the sorted
// keys of those selector matches, checking that it splits them.
func shardClient(t *testing.T, selector apisharding.Selector) (*metadatafake.FakeMetadataClient, []string) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	var want []string
	for i := range 20 {
		d := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("%c-uid", 'a'+i)),
		}}
		objs = append(objs, d)
		if ok, err := selector.Matches(d); err != nil {
			t.Fatal(err)
		} else if ok {
			want = append(want, "ns/"+d.GetName())
		}
	}
	if len(want) == 0 || len(want) == len(objs) {
		t.Fatalf("the selector should split the pods, selects %d of %d", len(want), len(objs))
	}
	sort.Strings(want)
	return metadatafake.NewSimpleMetadataClient(scheme, objs...), want
}

// On either minor, the factory's informers keep only the objects the
// selector matches (the fake answers without ShardInfo: filtered on the
// client); an informer's own SetShardSelector before Start replaces the
// factory's, and after Start is refused.
func TestWithShardSelectorRestrictsTheFactorysInformers(t *testing.T) {
	defer goleak.VerifyNone(t)
	client, want := shardClient(t, factorytest.LowHalf)
	keys, err := factorytest.CachedKeys(t, NewSharedInformerFactoryWithOptions(client, 0, WithShardSelector(factorytest.LowHalf)), pods, nil)
	factorytest.AssertKeys(t, want, keys)
	if err == nil || err.Error() != "informer has already started" {
		t.Errorf("SetShardSelector after Start = %v, want informer has already started", err)
	}
	client, want = shardClient(t, factorytest.HighHalf)
	keys, _ = factorytest.CachedKeys(t, NewSharedInformerFactoryWithOptions(client, 0, WithShardSelector(factorytest.LowHalf)), pods, factorytest.HighHalfBeforeStart(pods))
	factorytest.AssertKeys(t, want, keys)
}
