package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/integration/apiserver"
	"github.com/openinformer/cache/internal/restartfsm"
	"github.com/openinformer/cache/internal/restartfsm/catchup"
	"github.com/openinformer/cache/internal/snapshot"
)

// TestWarmRestartPartsOnARealServer: the warm restart's parts as built
// (internal/snapshot's file, restartfsm's catch-up) against a real API
// server. client-go's informer syncs widgets and stops; its cache is saved;
// widgets change while it is down and others keep changing during the
// restart. The catch-up makes no full LIST and no watch-list, at most one
// limit=1 probe, and its staged cache equals the server's state at the
// version it synced at, read back with an exact-version LIST.
func TestWarmRestartPartsOnARealServer(t *testing.T) {
	scene := newRestartScene(t, "parts")
	srv, client := scene.srv, scene.client

	cold := startCounted(t, srv, implementations[0])
	cold.stop()
	saveWidgets(t, cold.informer, scene.path)

	_, flow := scene.whileDown(t)
	requests, bytes := countedListWatch(t, srv)
	st := widgetState{}
	begin := time.Now()
	res := catchup.Run(context.Background(), catchup.Config{
		ListerWatcher: requests,
		Load:          func() (string, error) { return loadWidgets(scene.path, st) },
		Apply: func(ev watch.Event) {
			u := ev.Object.(*unstructured.Unstructured)
			if ev.Type == watch.Deleted {
				delete(st, widgetKey(u))
				return
			}
			st[widgetKey(u)] = parseRV(u)
		},
		Machine: restartfsm.Config{CatchUpTimeout: time.Minute},
	})
	took := time.Since(begin)
	writes := flow()
	if !res.Synced {
		t.Fatalf("the restart fell back: %v: %v", res.Reason, res.Err)
	}
	checkNoFullSync(t, "the restart", requests)
	list, err := client.Resource(apiserver.WidgetGVR).List(context.Background(), metav1.ListOptions{ResourceVersion: res.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatalf("exact list at %s: %v", res.ResourceVersion, err)
	}
	want := widgetState{}
	for i := range list.Items {
		want[widgetKey(&list.Items[i])] = parseRV(&list.Items[i])
	}
	if d := want.diff(st); d != "" {
		t.Errorf("staged cache at %s differs from the server's: %s", res.ResourceVersion, d)
	}
	t.Logf("restart caught up at %s in %v (client-go cold sync %v) while %d writes flowed; read %d bytes, %.2f%% of a cold sync's %d; requests %v",
		res.ResourceVersion, took, cold.syncTime, writes, bytes.Load(), 100*float64(bytes.Load())/float64(cold.bytes.Load()), cold.bytes.Load(), requests.log())
}

// restartScene is where a warm restart test starts: a real API server
// with its watch cache, n widgets on it and a path for the snapshot.
type restartScene struct {
	srv    *apiserver.Server
	client dynamic.Interface
	keys   []string
	path   string
}

// newRestartScene starts the server and creates scaled(1000) widgets named
// prefix-i.
func newRestartScene(t *testing.T, prefix string) *restartScene {
	t.Helper()
	expectOurGoroutinesGone(t)
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	client := srv.Dynamic()
	return &restartScene{srv: srv, client: client, keys: createWidgets(t, client, prefix, scaled(1000)),
		path: filepath.Join(t.TempDir(), "widgets.snap")}
}

// whileDown makes what happens while the informer is down: 1% of the
// widgets change (changeWhileDown), and a flow of writes to others starts,
// to go on through the restart; the function returned stops the flow and
// tells how many writes it made.
func (s *restartScene) whileDown(t *testing.T) (downChanges, func() int) {
	t.Helper()
	down := changeWhileDown(t, s.client, s.keys, len(s.keys)/200)
	return down, startFlow(t, s.client, "flow", 20)
}

// checkNoFullSync fails the test unless requests hold no full LIST, no
// list page, no watch-list and at most one limit=1 probe.
func checkNoFullSync(t *testing.T, what string, requests *requestLog) {
	t.Helper()
	counts := requests.counts()
	if counts[fake.FullList] != 0 || counts[fake.ListPage] != 0 || counts[fake.InitialWatch] != 0 || counts[fake.ProbeList] > 1 {
		t.Errorf("%s's requests %v: want no full LIST, no watch-list, at most one limit=1 probe", what, requests.log())
	}
}

// checkFullSync stops the test unless a first start's requests hold a
// full sync: a log that saw none would be blind to the restart's too.
func checkFullSync(t *testing.T, requests *requestLog) {
	t.Helper()
	if requests.counts()[fake.FullList]+requests.counts()[fake.InitialWatch] == 0 {
		t.Fatal("the first start made no full sync: the request log is blind")
	}
}

// saveWidgets writes a stopped informer's widgets, as JSON, to a snapshot
// at path, at the informer's last synced version.
func saveWidgets(t *testing.T, informer clientcache.SharedIndexInformer, path string) {
	t.Helper()
	objs := informer.GetStore().List()
	h := widgetHeader
	h.ResourceVersion, h.WrittenAt, h.Count = informer.LastSyncResourceVersion(), time.Now(), len(objs)
	w, err := snapshot.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		u := obj.(*unstructured.Unstructured)
		data, err := u.MarshalJSON()
		if err != nil {
			w.Abort()
			t.Fatal(err)
		}
		if err := w.Add(widgetKey(u), data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// widgetHeader is the identity of the widgets' snapshot.
var widgetHeader = snapshot.Header{Resource: apiserver.WidgetGVR.String(), Encoding: "json"}

// loadWidgets reads the snapshot at path into st and returns its version.
func loadWidgets(path string, st widgetState) (string, error) {
	h := widgetHeader
	r, err := snapshot.Open(path, &h)
	if err != nil {
		return "", err
	}
	defer r.Close()
	for {
		_, v, err := r.Next()
		if err == io.EOF {
			return r.Header().ResourceVersion, nil
		}
		if err != nil {
			return "", err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(v); err != nil {
			return "", err
		}
		st[widgetKey(u)] = parseRV(u)
	}
}

// restartRun is an informerRun of ours with a snapshot, its requests
// classified and the bytes it read counted.
type restartRun struct {
	*informerRun
	requests *requestLog
	bytes    *atomic.Int64
}

// startCounted runs impl's informer of widgets, its requests logged and
// the bytes it reads counted, and waits until it has synced. The informer
// gets the widget's apiVersion and kind in its example object, which a
// snapshot's identity needs.
func startCounted(t *testing.T, srv *apiserver.Server, impl implementation) *restartRun {
	t.Helper()
	config, bytes := countedConfig(srv)
	requests := &requestLog{}
	logged := implementation{name: impl.name, newInformer: func(lw clientcache.ListerWatcher, _ runtime.Object, resync time.Duration, indexers clientcache.Indexers) clientcache.SharedIndexInformer {
		requests.inner = clientcache.ToListerWatcherWithContext(lw)
		example := &unstructured.Unstructured{}
		example.SetGroupVersionKind(apiserver.WidgetGVK)
		return impl.newInformer(requests, example, resync, indexers)
	}}
	run := startInformerWith(t, srv, logged, informerSetup{config: config})
	return &restartRun{informerRun: run, requests: requests, bytes: bytes}
}

// countedListWatch lists and watches every widget through a client whose
// response bytes are counted, logging each request.
func countedListWatch(t *testing.T, srv *apiserver.Server) (*requestLog, *atomic.Int64) {
	t.Helper()
	config, bytes := countedConfig(srv)
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return &requestLog{inner: widgetListWatch(client, "")}, bytes
}

// countedConfig is the server's client config with the bytes of every
// response body counted.
func countedConfig(srv *apiserver.Server) (*rest.Config, *atomic.Int64) {
	bytes := &atomic.Int64{}
	config := srv.Config()
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				resp.Body = &countedBody{ReadCloser: resp.Body, n: bytes}
			}
			return resp, err
		})
	})
	return config, bytes
}

// countedBody counts the bytes read from a response body.
type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// requestLog is a ListerWatcher recording every request's options, so they
// can be classified as fake/ classifies its own.
type requestLog struct {
	inner clientcache.ListerWatcherWithContext
	mu    sync.Mutex
	reqs  []fake.Request
}

func (l *requestLog) record(verb string, opts metav1.ListOptions) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, fake.Request{Verb: verb, Options: *opts.DeepCopy()})
}

// counts is how many requests of each kind were made.
func (l *requestLog) counts() map[fake.RequestKind]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := map[fake.RequestKind]int{}
	for _, r := range l.reqs {
		c[r.Kind()]++
	}
	return c
}

// log describes each request: kind and resourceVersion.
func (l *requestLog) log() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.reqs))
	for _, r := range l.reqs {
		out = append(out, fmt.Sprintf("%v@%q", r.Kind(), r.Options.ResourceVersion))
	}
	return out
}

func (l *requestLog) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *requestLog) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l *requestLog) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.record(fake.VerbList, opts)
	return l.inner.ListWithContext(ctx, opts)
}

func (l *requestLog) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	l.record(fake.VerbWatch, opts)
	return l.inner.WatchWithContext(ctx, opts)
}

// createWidgets creates n widgets named prefix-i across the test
// namespaces and returns their keys.
func createWidgets(t *testing.T, client dynamic.Interface, prefix string, n int) []string {
	t.Helper()
	keys := make([]string, 0, n)
	for i := range n {
		ns := testNamespaces[i%len(testNamespaces)]
		name := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := client.Resource(apiserver.WidgetGVR).Namespace(ns).Create(context.Background(), apiserver.NewWidget(ns, name, 0), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s/%s: %v", ns, name, err)
		}
		keys = append(keys, ns+"/"+name)
	}
	return keys
}

// downChanges are the writes made while the informer was down: the
// version each updated widget reached, and the widgets deleted.
type downChanges struct {
	updated map[string]uint64
	deleted []string
}

// changeWhileDown updates m widgets, deletes m/2 others and creates m/2
// new ones.
func changeWhileDown(t *testing.T, client dynamic.Interface, keys []string, m int) downChanges {
	t.Helper()
	ctx := context.Background()
	down := downChanges{updated: map[string]uint64{}}
	for i, key := range keys[:m+m/2] {
		ns, name, _ := cutKey(key)
		widgets := client.Resource(apiserver.WidgetGVR).Namespace(ns)
		if i >= m {
			if err := widgets.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete %s: %v", key, err)
			}
			down.deleted = append(down.deleted, key)
			continue
		}
		u, err := widgets.Update(ctx, widgetAt(ns, name, 1, getRV(t, widgets, name)), metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update %s: %v", key, err)
		}
		down.updated[key] = parseRV(u)
	}
	createWidgets(t, client, "down", m/2)
	return down
}

// checkNothingOlderThanTheRestart: a handler of the warm restart never saw
// a widget deleted while it was down, nor a version of an updated one
// older than the update.
func checkNothingOlderThanTheRestart(t *testing.T, r *eventRecorder, down downChanges) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, key := range down.deleted {
		if events := r.byKey[key]; len(events) != 0 {
			t.Errorf("%s, deleted while down, reached the handler: %v", key, events)
		}
	}
	for key, rv := range down.updated {
		if events := r.byKey[key]; len(events) == 0 || events[0].op != opAdd || events[0].rv < rv {
			t.Errorf("%s, updated to %d while down: the handler's first notifications %v", key, rv, events)
		}
	}
}

// startFlow keeps updating its own perWidgets widgets, one every few
// milliseconds, until the returned function is called, which reports how
// many writes were made. Its goroutine is the test's and exits then.
func startFlow(t *testing.T, client dynamic.Interface, prefix string, perWidgets int) func() int {
	t.Helper()
	keys := createWidgets(t, client, prefix, perWidgets)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		writes := 0
		defer func() { done <- writes }()
		for i := 0; ctx.Err() == nil; i++ {
			ns, name, _ := cutKey(keys[i%len(keys)])
			widgets := client.Resource(apiserver.WidgetGVR).Namespace(ns)
			u, err := widgets.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			if _, err := widgets.Update(ctx, widgetAt(ns, name, int64(i), u.GetResourceVersion()), metav1.UpdateOptions{}); err == nil {
				writes++
			}
		}
	}()
	return sync.OnceValue(func() int {
		cancel()
		return <-done
	})
}

func getRV(t *testing.T, widgets dynamic.ResourceInterface, name string) string {
	t.Helper()
	u, err := widgets.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return u.GetResourceVersion()
}

// widgetAt is a widget with value to write over resourceVersion.
func widgetAt(namespace, name string, value int64, resourceVersion string) *unstructured.Unstructured {
	u := apiserver.NewWidget(namespace, name, value)
	u.SetResourceVersion(resourceVersion)
	return u
}

// cutKey splits namespace/name.
func cutKey(key string) (namespace, name string, ok bool) {
	return strings.Cut(key, "/")
}
