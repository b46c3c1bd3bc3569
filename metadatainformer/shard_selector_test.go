package metadatainformer

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clientmetadatainformer "k8s.io/client-go/metadata/metadatainformer"
)

// lowHalf and highHalf split the UID hash space in two.
var (
	lowHalf = apisharding.NewSelector(apisharding.ShardRangeRequirement{
		Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000",
	})
	highHalf = apisharding.NewSelector(apisharding.ShardRangeRequirement{
		Key: "object.metadata.uid", Start: "0x8000000000000000", End: "0x10000000000000000",
	})
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

// cachedKeys starts f's pods informer (after prepare, if set),
// waits for it to sync and returns its sorted keys and what
// SetShardSelector says once it runs.
func cachedKeys(t *testing.T, f clientmetadatainformer.SharedInformerFactory, prepare func(*testing.T, clientmetadatainformer.SharedInformerFactory)) ([]string, error) {
	t.Helper()
	informer := f.ForResource(pods).Informer()
	if prepare != nil {
		prepare(t, f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer func() { cancel(); f.Shutdown() }()
	f.Start(ctx.Done())
	if synced := f.WaitForCacheSync(ctx.Done()); !synced[pods] {
		t.Fatalf("not synced: %v", synced)
	}
	keys := informer.GetStore().ListKeys()
	sort.Strings(keys)
	return keys, setShardSelector(t, informer, highHalf)
}

// setShardSelector calls the informer's SetShardSelector, which v0.37's
// SharedIndexInformer interface lacks and ours has on either minor.
func setShardSelector(t *testing.T, informer any, selector apisharding.Selector) error {
	t.Helper()
	s, ok := informer.(interface {
		SetShardSelector(apisharding.Selector) error
	})
	if !ok {
		t.Fatalf("%T has no SetShardSelector", informer)
	}
	return s.SetShardSelector(selector)
}

// setHighHalf gives the factory's informer another selector before it
// starts: the informer's own call is the later one and wins.
func setHighHalf(t *testing.T, f clientmetadatainformer.SharedInformerFactory) {
	if err := setShardSelector(t, f.ForResource(pods).Informer(), highHalf); err != nil {
		t.Fatalf("SetShardSelector before Start: %v", err)
	}
}

// On either minor, the factory's informers keep only the objects the
// selector matches (the fake answers without ShardInfo: filtered on the
// client); an informer's own SetShardSelector before Start replaces the
// factory's, and after Start is refused.
func TestWithShardSelectorRestrictsTheFactorysInformers(t *testing.T) {
	defer goleak.VerifyNone(t)
	client, want := shardClient(t, lowHalf)
	keys, err := cachedKeys(t, NewSharedInformerFactoryWithOptions(client, 0, WithShardSelector(lowHalf)), nil)
	assertKeys(t, want, keys)
	if err == nil || err.Error() != "informer has already started" {
		t.Errorf("SetShardSelector after Start = %v, want informer has already started", err)
	}
	client, want = shardClient(t, highHalf)
	keys, _ = cachedKeys(t, NewSharedInformerFactoryWithOptions(client, 0, WithShardSelector(lowHalf)), setHighHalf)
	assertKeys(t, want, keys)
}

func assertKeys(t *testing.T, want, got []string) {
	t.Helper()
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("cached %v, want %v", got, want)
	}
}
