package dynamicinformer

import (
	"context"
	"reflect"
	"testing"

	cache "github.com/openinformer/cache"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

func requireOurs(t *testing.T, informer cache.SharedIndexInformer) {
	t.Helper()
	if e := reflect.TypeOf(informer).Elem(); e.PkgPath() != "github.com/openinformer/cache" || e.Name() != "sharedIndexInformer" {
		t.Errorf("informer is %s.%s, want openinformer's sharedIndexInformer", e.PkgPath(), e.Name())
	}
}

func TestEveryInformerIsOursAndOptionsApply(t *testing.T) {
	defer goleak.VerifyNone(t)
	d := &unstructured.Unstructured{}
	d.SetAPIVersion("apps/v1")
	d.SetKind("Deployment")
	d.SetNamespace("ns")
	d.SetName("d")
	d.SetManagedFields(nil)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{deployments: "DeploymentList"}, d)
	var adjusted []schema.GroupVersionResource
	f := NewDynamicSharedInformerFactoryWithOptions(client, 0, WithInformerOptions(func(gvr schema.GroupVersionResource, opts *cache.SharedIndexInformerOptions) {
		adjusted = append(adjusted, gvr)
		opts.StripManagedFields = true
	}))
	gi := f.ForResource(deployments)
	requireOurs(t, gi.Informer())
	requireOurs(t, NewFilteredDynamicInformer(client, deployments, "", 0, cache.Indexers{}, nil).Informer())
	requireOurs(t, NewDynamicSharedInformerFactory(client, 0).ForResource(deployments).Informer())
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	if synced := f.WaitForCacheSync(ctx.Done()); !synced[deployments] {
		t.Fatalf("not synced: %v", synced)
	}
	if _, err := gi.Lister().ByNamespace("ns").Get("d"); err != nil {
		t.Errorf("lister: %v", err)
	}
	if len(adjusted) != 1 || adjusted[0] != deployments {
		t.Errorf("WithInformerOptions saw %v, want deployments once", adjusted)
	}
	cancel()
	f.Shutdown()
}
