package integration

import (
	"context"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	clientmetadatainformer "k8s.io/client-go/metadata/metadatainformer"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/integration/apiserver"
	"github.com/openinformer/cache/metadatainformer"
)

// TestWarmRestartOfMetadataInformer: the metadata factory's informer of
// widgets, compact, syncs and saves its snapshot when the factory shuts
// down (WithSnapshots); widgets change while it is down and others keep
// changing while it restarts. The restart makes no full LIST and no
// watch-list, and its cache ends equal, object for object, to client-go's
// metadata informer's cold sync, and to the server.
func TestWarmRestartOfMetadataInformer(t *testing.T) {
	scene := newRestartScene(t, "meta")
	dir := t.TempDir()

	cold := &requestLog{}
	startMetadataFactory(t, scene.srv, dir, cold).stop()
	checkFullSync(t, cold)

	_, flow := scene.whileDown(t)
	requests := &requestLog{}
	warm := startMetadataFactory(t, scene.srv, dir, requests)
	defer warm.stop()
	clientGo := startMetadataFactory(t, scene.srv, "", nil)
	defer clientGo.stop()
	flowWrites := flow()

	checkNoFullSync(t, "the metadata informer's warm restart", requests)
	want := serverState(t, scene.client)
	for _, run := range []*metadataRun{warm, clientGo} {
		eventually(t, 2*time.Minute, run.name+" cache equals server", func() (bool, string) {
			d := want.diff(metadataState(run.informer))
			return d == "", d
		})
	}
	if got, want := sortedMetadata(warm.informer), sortedMetadata(clientGo.informer); !reflect.DeepEqual(got, want) {
		t.Errorf("the warm restart's cache differs from client-go's cold one")
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("first difference at %s:\n got %#v\nwant %#v", want[i].Name, got[i], want[i])
				break
			}
		}
	}
	t.Logf("metadata warm restart: synced in %v (client-go cold %v) while %d writes flowed; requests %v",
		warm.syncTime, clientGo.syncTime, flowWrites, requests.log())
}

// metadataRun is a metadata factory's informer of widgets, running.
type metadataRun struct {
	name     string
	informer clientcache.SharedIndexInformer
	syncTime time.Duration
	stop     func() // stops the factory and waits for its informers
}

// startMetadataFactory starts a metadata factory's informer of widgets and
// waits until it has synced: ours, compact and saving snapshots in dir,
// its requests logged in requests; client-go's when dir is "".
func startMetadataFactory(t *testing.T, srv *apiserver.Server, dir string, requests *requestLog) *metadataRun {
	t.Helper()
	config := srv.Config()
	if requests != nil {
		config.Wrap(requests.wrap)
	}
	client, err := metadata.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	run := &metadataRun{name: "client-go metadata"}
	var factory clientmetadatainformer.SharedInformerFactory
	if dir == "" {
		factory = clientmetadatainformer.NewSharedInformerFactory(client, 0)
	} else {
		run.name = "openinformer metadata warm"
		factory = metadatainformer.NewSharedInformerFactoryWithOptions(client, 0,
			metadatainformer.WithSnapshots(dir, "v1"),
			metadatainformer.WithInformerOptions(func(_ schema.GroupVersionResource, opts *cache.SharedIndexInformerOptions) {
				opts.Compact = &cache.CompactOptions{}
			}))
	}
	run.informer = factory.ForResource(apiserver.WidgetGVR).Informer()
	ctx, cancel := context.WithCancel(context.Background())
	begin := time.Now()
	factory.Start(ctx.Done())
	run.stop = sync.OnceFunc(func() { cancel(); factory.Shutdown() })
	t.Cleanup(run.stop)
	if synced := factory.WaitForCacheSync(ctx.Done()); !synced[apiserver.WidgetGVR] {
		t.Fatalf("%s: not synced", run.name)
	}
	run.syncTime = time.Since(begin)
	return run
}

// wrap records each list and watch of widgets that rt carries, with the
// options its query holds.
func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		query := req.URL.Query()
		var opts metav1.ListOptions
		if err := metav1.Convert_url_Values_To_v1_ListOptions(&query, &opts, nil); err == nil && req.Method == http.MethodGet {
			verb := fake.VerbList
			if opts.Watch {
				verb = fake.VerbWatch
			}
			l.record(verb, opts)
		}
		return rt.RoundTrip(req)
	})
}

// metadataState reads a metadata informer's store.
func metadataState(informer clientcache.SharedIndexInformer) widgetState {
	state := widgetState{}
	for _, obj := range sortedMetadata(informer) {
		rv, _ := strconv.ParseUint(obj.ResourceVersion, 10, 64)
		state[obj.Namespace+"/"+obj.Name] = rv
	}
	return state
}

// sortedMetadata is a metadata informer's objects, by key.
func sortedMetadata(informer clientcache.SharedIndexInformer) []*metav1.PartialObjectMetadata {
	var out []*metav1.PartialObjectMetadata
	for _, obj := range informer.GetStore().List() {
		out = append(out, obj.(*metav1.PartialObjectMetadata))
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}
