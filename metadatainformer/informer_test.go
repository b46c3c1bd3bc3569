package metadatainformer

import (
	"context"
	"reflect"
	"testing"

	cache "github.com/openinformer/cache"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
)

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func requireOurs(t *testing.T, informer cache.SharedIndexInformer) {
	t.Helper()
	if e := reflect.TypeOf(informer).Elem(); e.PkgPath() != "github.com/openinformer/cache" || e.Name() != "sharedIndexInformer" {
		t.Errorf("informer is %s.%s, want openinformer's sharedIndexInformer", e.PkgPath(), e.Name())
	}
}

func TestEveryInformerIsOursAndOptionsApply(t *testing.T) {
	defer goleak.VerifyNone(t)
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	client := metadatafake.NewSimpleMetadataClient(scheme, p)
	var adjusted []schema.GroupVersionResource
	f := NewSharedInformerFactoryWithOptions(client, 0, WithInformerOptions(func(gvr schema.GroupVersionResource, _ *cache.SharedIndexInformerOptions) {
		adjusted = append(adjusted, gvr)
	}))
	gi := f.ForResource(pods)
	requireOurs(t, gi.Informer())
	requireOurs(t, NewFilteredMetadataInformer(client, pods, "", 0, cache.Indexers{}, nil).Informer())
	requireOurs(t, NewSharedInformerFactory(client, 0).ForResource(pods).Informer())
	requireOurs(t, NewFilteredSharedInformerFactory(client, 0, "ns", nil).ForResource(pods).Informer())
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	if synced := f.WaitForCacheSync(ctx.Done()); !synced[pods] {
		t.Fatalf("not synced: %v", synced)
	}
	if _, err := gi.Lister().ByNamespace("ns").Get("p"); err != nil {
		t.Errorf("lister: %v", err)
	}
	if len(adjusted) != 1 || adjusted[0] != pods {
		t.Errorf("WithInformerOptions saw %v, want pods once", adjusted)
	}
	cancel()
	f.Shutdown()
}
