// Package factorytest holds what the dynamic and metadata factories' tests
// of WithShardSelector share: both factories hand out informers by
// resource, so one set of helpers starts either, ours or client-go's.
package factorytest

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	clientinformers "k8s.io/client-go/informers"
)

// LowHalf and HighHalf split the UID hash space in two.
var (
	LowHalf = apisharding.NewSelector(apisharding.ShardRangeRequirement{
		Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000",
	})
	HighHalf = apisharding.NewSelector(apisharding.ShardRangeRequirement{
		Key: "object.metadata.uid", Start: "0x8000000000000000", End: "0x10000000000000000",
	})
)

// Factory is what client-go's dynamic and metadata factories, and ours,
// have in common.
type Factory interface {
	ForResource(gvr schema.GroupVersionResource) clientinformers.GenericInformer
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool
	Shutdown()
}

// CachedKeys starts f's informer of gvr (after prepare, if set), waits for
// it to sync and returns its sorted keys and what SetShardSelector says
// once it runs.
func CachedKeys(t *testing.T, f Factory, gvr schema.GroupVersionResource, prepare func(*testing.T, Factory)) ([]string, error) {
	t.Helper()
	informer := f.ForResource(gvr).Informer()
	if prepare != nil {
		prepare(t, f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer func() { cancel(); f.Shutdown() }()
	f.Start(ctx.Done())
	if synced := f.WaitForCacheSync(ctx.Done()); !synced[gvr] {
		t.Fatalf("not synced: %v", synced)
	}
	keys := informer.GetStore().ListKeys()
	sort.Strings(keys)
	return keys, SetShardSelector(t, informer, HighHalf)
}

// SetShardSelector calls the informer's SetShardSelector, which v0.37's
// SharedIndexInformer interface lacks and ours has on either minor.
func SetShardSelector(t *testing.T, informer any, selector apisharding.Selector) error {
	t.Helper()
	s, ok := informer.(interface {
		SetShardSelector(apisharding.Selector) error
	})
	if !ok {
		t.Fatalf("%T has no SetShardSelector", informer)
	}
	return s.SetShardSelector(selector)
}

// HighHalfBeforeStart gives the factory's informer of gvr another selector
// before it starts: the informer's own call is the later one and wins.
func HighHalfBeforeStart(gvr schema.GroupVersionResource) func(*testing.T, Factory) {
	return func(t *testing.T, f Factory) {
		if err := SetShardSelector(t, f.ForResource(gvr).Informer(), HighHalf); err != nil {
			t.Fatalf("SetShardSelector before Start: %v", err)
		}
	}
}

// AssertKeys reports got unless it equals want.
func AssertKeys(t *testing.T, want, got []string) {
	t.Helper()
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("cached %v, want %v", got, want)
	}
}
