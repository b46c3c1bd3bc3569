package metadatainformer

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientinformers "k8s.io/client-go/informers"
	clientmetadatainformer "k8s.io/client-go/metadata/metadatainformer"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
	ofake "github.com/openinformer/cache/fake"
)

// Our metadata informer in compact mode, no object kept decoded, caches,
// lists and hands its handler objects equal under reflect.DeepEqual to
// those of client-go's metadata informer beside it, over one server,
// through creates, updates and deletes, whichever TypeMeta the client
// gives them: none (a protobuf response), meta.k8s.io's (JSON) or the
// resource's own kind (as controller-runtime sets it).
func TestCompactMatchesClientGo(t *testing.T) {
	defer goleak.VerifyNone(t)
	for name, typeMeta := range map[string]metav1.TypeMeta{
		"protobuf":           {},
		"json":               {APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		"controller-runtime": {APIVersion: "v1", Kind: "Pod"},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { compareWithClientGo(t, typeMeta) })
		})
	}
}

func compareWithClientGo(t *testing.T, typeMeta metav1.TypeMeta) {
	srv := ofake.MustNew(ofake.Options{Object: &corev1.Pod{}})
	for i := range 12 {
		mustDo(t)(srv.Create(realisticPod(i)))
	}
	client := serverMetadataClient{srv: srv, typeMeta: typeMeta}
	compact := WithInformerOptions(func(_ schema.GroupVersionResource, opts *cache.SharedIndexInformerOptions) {
		opts.Compact = &cache.CompactOptions{}
	})
	ours := NewSharedInformerFactoryWithOptions(client, 0, compact)
	theirs := clientmetadatainformer.NewSharedInformerFactory(client, 0)
	sides := []*side{newSide(t, "ours", ours.ForResource(pods)), newSide(t, "client-go", theirs.ForResource(pods))}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); ours.Shutdown(); theirs.Shutdown() }()
	ours.Start(ctx.Done())
	theirs.Start(ctx.Done())
	for _, f := range []interface {
		WaitForCacheSync(<-chan struct{}) map[schema.GroupVersionResource]bool
	}{ours, theirs} {
		if synced := f.WaitForCacheSync(ctx.Done()); !synced[pods] {
			t.Fatalf("%T not synced", f)
		}
	}
	synctest.Wait()
	requireSame(t, "synced", sides)

	for i := range 4 {
		obj, err := srv.Get(fmt.Sprintf("ns%d", i%2), fmt.Sprintf("web-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		p := obj.(*corev1.Pod)
		p.Labels["rollout"] = "2"
		p.Finalizers = nil
		mustDo(t)(srv.Update(p))
	}
	mustDo(t)(srv.Delete("ns1", "web-5"))
	mustDo(t)(srv.Create(realisticPod(12)))
	synctest.Wait()
	requireSame(t, "after writes", sides)
}

// mustDo fails the test on a write's error.
func mustDo(t *testing.T) func(runtime.Object, error) {
	return func(_ runtime.Object, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// realisticPod is a pod with the metadata real ones carry: labels,
// annotations, an owner, finalizers and managed fields.
func realisticPod(i int) *corev1.Pod {
	at := metav1.NewTime(time.Now().Truncate(time.Second))
	controller := true
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: fmt.Sprintf("ns%d", i%2), Name: fmt.Sprintf("web-%d", i), GenerateName: "web-",
		Labels:      map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f6"},
		Annotations: map[string]string{"prometheus.io/scrape": "true"},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6", UID: "9b2f0c3e",
			Controller: &controller, BlockOwnerDeletion: &controller,
		}},
		Finalizers: []string{"example.com/cleanup"},
		ManagedFields: []metav1.ManagedFieldsEntry{{
			Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &at, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`),
		}},
	}}
}

// side is one factory's informer of pods with a handler keeping the last
// object it was given per key.
type side struct {
	name     string
	informer clientinformers.GenericInformer
	mu       sync.Mutex
	handed   map[string]any
}

func newSide(t *testing.T, name string, gi clientinformers.GenericInformer) *side {
	t.Helper()
	s := &side{name: name, informer: gi, handed: map[string]any{}}
	keep := func(obj any) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.handed[mustKey(t, obj)] = obj
	}
	if _, err := gi.Informer().AddEventHandler(clientcache.ResourceEventHandlerFuncs{
		AddFunc:    keep,
		UpdateFunc: func(_, obj any) { keep(obj) },
		DeleteFunc: func(obj any) {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.handed, mustKey(t, obj))
		},
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func mustKey(t *testing.T, obj any) string {
	key, err := clientcache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		t.Errorf("key of %T: %v", obj, err)
	}
	return key
}

// views are what a side hands out: its store, its lister and its
// handler's last objects, each sorted by key.
func (s *side) views(t *testing.T) map[string][]any {
	t.Helper()
	listed, err := s.informer.Lister().List(labels.Everything())
	if err != nil {
		t.Fatalf("%s: lister: %v", s.name, err)
	}
	lister := make([]any, len(listed))
	for i, obj := range listed {
		lister[i] = obj
	}
	s.mu.Lock()
	handed := make([]any, 0, len(s.handed))
	for _, obj := range s.handed {
		handed = append(handed, obj)
	}
	s.mu.Unlock()
	views := map[string][]any{"store": s.informer.Informer().GetStore().List(), "lister": lister, "handler": handed}
	for _, objs := range views {
		sort.Slice(objs, func(i, j int) bool { return mustKey(t, objs[i]) < mustKey(t, objs[j]) })
	}
	return views
}

// requireSame fails unless every view of each side equals client-go's.
func requireSame(t *testing.T, when string, sides []*side) {
	t.Helper()
	ours, theirs := sides[0].views(t), sides[1].views(t)
	for view, want := range theirs {
		if len(want) == 0 {
			t.Fatalf("%s: client-go's %s is empty", when, view)
		}
		if got := ours[view]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: our %s differs from client-go's:\n got %v\nwant %v", when, view, got, want)
		}
	}
}
