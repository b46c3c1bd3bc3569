package metadatainformer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"

	cache "github.com/openinformer/cache"
	ofake "github.com/openinformer/cache/fake"
	build "github.com/openinformer/cache/internal/informerbuild"
)

// WithSnapshots gives each resource's informer its own file in the
// directory, named for the resource ForResource got and the factory's
// scope; a WithInformerOptions function sees it and may turn it off.
func TestWithSnapshotsGivesEachInformerItsFile(t *testing.T) {
	defer goleak.VerifyNone(t)
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	got := map[schema.GroupVersionResource]*cache.SnapshotOptions{}
	f := NewSharedInformerFactoryWithOptions(metadatafake.NewSimpleMetadataClient(scheme), 0,
		WithNamespace("ns"),
		WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "b=2,a=1" }),
		WithSnapshots(dir, "v1"),
		WithInformerOptions(func(gvr schema.GroupVersionResource, opts *cache.SharedIndexInformerOptions) {
			got[gvr] = opts.Snapshot
			if gvr == widgets {
				opts.Snapshot = nil
			}
		}))
	f.ForResource(pods)
	f.ForResource(widgets)
	scope := cache.SnapshotScope{Namespace: "ns", LabelSelector: "a=1,b=2"}
	for _, gvr := range []schema.GroupVersionResource{pods, widgets} {
		want := filepath.Join(dir, build.SnapshotFileName(gvr, scope, "", "v1"))
		if s := got[gvr]; s == nil || s.Path != want || *s.Scope != scope || s.Resource != gvr || s.Version != "v1" {
			t.Errorf("%v: snapshot %+v, want path %q scope %+v resource %v version v1", gvr, s, want, scope, gvr)
		}
	}
}

// The factory's namespace and tweak, however given, are each informer's
// snapshot scope, its selectors written canonical.
func TestSnapshotScopeIsTheFactorysNamespaceAndTweak(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var got *cache.SnapshotOptions
	seen := WithInformerOptions(func(_ schema.GroupVersionResource, opts *cache.SharedIndexInformerOptions) { got = opts.Snapshot })
	tweak := func(o *metav1.ListOptions) { o.LabelSelector, o.FieldSelector = "b=2,a=1", "metadata.name=p" }
	want := cache.SnapshotScope{Namespace: "ns", LabelSelector: "a=1,b=2", FieldSelector: "metadata.name=p"}
	client := metadatafake.NewSimpleMetadataClient(scheme)
	NewSharedInformerFactoryWithOptions(client, 0, WithSnapshots(t.TempDir(), ""), WithNamespace("ns"), WithTweakListOptions(tweak), seen).ForResource(pods)
	if got == nil || *got.Scope != want {
		t.Errorf("scope %+v, want %+v", got, want)
	}
	NewSharedInformerFactoryWithOptions(client, 0, WithSnapshots(t.TempDir(), ""), seen).ForResource(pods)
	if got == nil || *got.Scope != (cache.SnapshotScope{}) {
		t.Errorf("an unfiltered factory's scope %+v, want every object", got)
	}
}

// A resource's informer saves its file when the factory shuts down, and
// the next factory's informer restarts from it without a full sync, in
// either store form, its cache then holding exactly what the server's
// metadata is. A file that does not load (truncated) falls back to a
// full sync.
func TestWithSnapshotsRestartsWarm(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, form := range []struct {
		name    string
		compact *cache.CompactOptions
	}{{"plain", nil}, {"compact", &cache.CompactOptions{}}} {
		t.Run(form.name, func(t *testing.T) {
			restartTwice(t, form.compact, nil)
		})
	}
	t.Run("truncated file", func(t *testing.T) {
		restartTwice(t, nil, func(t *testing.T, path string) {
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, info.Size()/2); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// restartTwice starts a factory of pods over one fake server twice, a pod
// created before each start, with compact storage when compact is set.
// Between the starts, betweenStarts (when set) is given the snapshot file;
// then the restart must fully sync, else it must not.
func restartTwice(t *testing.T, compact *cache.CompactOptions, betweenStarts func(*testing.T, string)) {
	dir := t.TempDir()
	// No request fails, so apimachinery's error reporting, unsafe in a
	// bubble (fake.PrepareForSynctest), is never called.
	synctest.Test(t, func(t *testing.T) {
		srv := ofake.MustNew(ofake.Options{Object: &corev1.Pod{}})
		for start := range 2 {
			if _, err := srv.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: fmt.Sprintf("p%d", start), UID: types.UID(fmt.Sprintf("uid-%d", start)),
				Labels: map[string]string{"app": "web"}, Finalizers: []string{"example.com/f"},
			}}); err != nil {
				t.Fatal(err)
			}
			srv.ResetRequests()
			f := NewSharedInformerFactoryWithOptions(metadataOn(srv), 0, WithNamespace("ns"), WithSnapshots(dir, ""),
				WithInformerOptions(func(_ schema.GroupVersionResource, opts *cache.SharedIndexInformerOptions) { opts.Compact = compact }))
			gi := f.ForResource(pods)
			ctx, cancel := context.WithCancel(context.Background())
			f.Start(ctx.Done())
			if synced := f.WaitForCacheSync(ctx.Done()); !synced[pods] {
				t.Fatalf("start %d: not synced", start)
			}
			if got, want := cachedObjects(gi.Informer()), serverMetadata(t, srv); !reflect.DeepEqual(got, want) {
				t.Errorf("start %d: cached %v, want the server's %v", start, got, want)
			}
			cancel()
			f.Shutdown()
			full := srv.RequestCounts().FullSyncs()
			switch {
			case start == 0 && betweenStarts != nil:
				betweenStarts(t, filepath.Join(dir, build.SnapshotFileName(pods, cache.SnapshotScope{Namespace: "ns"}, "", "")))
			case start == 1 && betweenStarts == nil && full != 0:
				t.Errorf("the restart made %d full syncs: %+v", full, srv.Requests())
			case start == 1 && betweenStarts != nil && full == 0:
				t.Errorf("the restart from a damaged file made no full sync: %+v", srv.Requests())
			}
		}
	})
}

// cachedObjects is the informer's objects, sorted by name.
func cachedObjects(informer cache.SharedIndexInformer) []*metav1.PartialObjectMetadata {
	var out []*metav1.PartialObjectMetadata
	for _, obj := range informer.GetStore().List() {
		out = append(out, obj.(*metav1.PartialObjectMetadata))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// serverMetadata is the metadata of srv's pods as a metadata client gets
// them, sorted by name.
func serverMetadata(t *testing.T, srv *ofake.Server) []*metav1.PartialObjectMetadata {
	t.Helper()
	var out []*metav1.PartialObjectMetadata
	for _, obj := range srv.Objects() {
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, serverMetadataClient{}.asMetadata(m))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// metadataOn is a metadata client whose lists and watches go to srv, with
// every option (client-go's fake keeps only the selectors), their objects
// turned into metadata as the API server turns them, without TypeMeta, as
// decoded from protobuf.
func metadataOn(srv *ofake.Server) metadata.Interface { return serverMetadataClient{srv: srv} }

// serverMetadataClient is metadataOn's client, its objects' TypeMeta set to
// typeMeta.
type serverMetadataClient struct {
	// ResourceInterface, nil, stands for the methods an informer never
	// calls (Get, Patch, the deletes, which differ between client-go's
	// minors): calling one panics, failing the test.
	metadata.ResourceInterface
	srv       *ofake.Server
	namespace string
	typeMeta  metav1.TypeMeta
}

// asMetadata is m as this client hands it out.
func (c serverMetadataClient) asMetadata(m metav1.Object) *metav1.PartialObjectMetadata {
	p := meta.AsPartialObjectMetadata(m)
	p.TypeMeta = c.typeMeta
	return p
}

func (c serverMetadataClient) Resource(schema.GroupVersionResource) metadata.Getter { return c }

func (c serverMetadataClient) Namespace(ns string) metadata.ResourceInterface {
	c.namespace = ns
	return c
}

func (c serverMetadataClient) lw() cache.ListerWatcherWithContext {
	if c.namespace == "" {
		return c.srv
	}
	return c.srv.Namespace(c.namespace)
}

func (c serverMetadataClient) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	obj, err := c.lw().ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*corev1.PodList)
	if !ok {
		return nil, fmt.Errorf("the server listed a %T", obj)
	}
	out := &metav1.PartialObjectMetadataList{ListMeta: list.ListMeta}
	for i := range list.Items {
		out.Items = append(out.Items, *c.asMetadata(&list.Items[i]))
	}
	return out, nil
}

func (c serverMetadataClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := c.lw().WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if m, err := meta.Accessor(ev.Object); err == nil && ev.Type != watch.Error {
			ev.Object = c.asMetadata(m)
		}
		return ev, true
	}), nil
}
