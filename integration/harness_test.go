package integration

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/integration/apiserver"
)

// widgetListWatch lists and watches widgets in all namespaces matching
// labelSelector, the way dynamicinformer's filtered informer does.
func widgetListWatch(client dynamic.Interface, labelSelector string) *clientcache.ListWatch {
	widgets := client.Resource(apiserver.WidgetGVR)
	return &clientcache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			options.LabelSelector = labelSelector
			return widgets.List(ctx, options)
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			options.LabelSelector = labelSelector
			return widgets.Watch(ctx, options)
		},
	}
}

// informerRun is one informer running against the server, with a recording
// handler and a probe in its transport.
type informerRun struct {
	impl     implementation
	informer clientcache.SharedIndexInformer
	recorder *eventRecorder
	handle   clientcache.ResourceEventHandlerRegistration // recorder's
	late     []*eventRecorder                             // handlers added while the informer runs
	probe    *trafficProbe
	syncTime time.Duration
	stop     func() // stops the informer and waits for Run to return
}

// startInformer runs impl's informer over widgets and waits until it has
// synced. It is stopped, and its Run awaited, when the test ends.
func startInformer(t *testing.T, srv *apiserver.Server, impl implementation) *informerRun {
	t.Helper()
	return startInformerWith(t, srv, impl, informerSetup{})
}

// informerSetup varies how startInformerWith builds an informer.
type informerSetup struct {
	labelSelector string                                      // server-side filter
	configure     func(clientcache.SharedIndexInformer) error // runs before Run
	config        *rest.Config                                // client config; nil: the server's
}

// startInformerWith is startInformer with a label selector and a setup step
// between creating the informer and running it.
func startInformerWith(t *testing.T, srv *apiserver.Server, impl implementation, setup informerSetup) *informerRun {
	t.Helper()
	probe := newTrafficProbe()
	config := setup.config
	if config == nil {
		config = srv.Config()
	}
	client, err := dynamic.NewForConfig(probe.wrap(config))
	if err != nil {
		t.Fatal(err)
	}
	informer := impl.newInformer(widgetListWatch(client, setup.labelSelector), &unstructured.Unstructured{}, 0,
		clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
	run := &informerRun{impl: impl, informer: informer, recorder: newEventRecorder(), probe: probe}
	handle, err := informer.AddEventHandler(run.recorder)
	if err != nil {
		t.Fatalf("%s: add handler: %v", impl.name, err)
	}
	run.handle = handle
	if setup.configure != nil {
		if err := setup.configure(informer); err != nil {
			t.Fatalf("%s: setup: %v", impl.name, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	begin := time.Now()
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	run.stop = sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(run.stop)
	eventually(t, 2*time.Minute, impl.name+" synced", func() (bool, string) {
		return informer.HasSynced(), "not synced"
	})
	run.syncTime = time.Since(begin)
	return run
}

func startInformers(t *testing.T, srv *apiserver.Server) []*informerRun {
	t.Helper()
	runs := make([]*informerRun, 0, len(implementations))
	for _, impl := range implementations {
		runs = append(runs, startInformer(t, srv, impl))
	}
	return runs
}

// eventually polls cond until it holds, failing the test with cond's last
// explanation after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var why string
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		var ok bool
		ok, why = cond()
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not reached within %v: %s", what, timeout, why)
	}
}

// widgetState maps namespace/name to resource version.
type widgetState map[string]uint64

func parseRV(u *unstructured.Unstructured) uint64 {
	rv, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
	if err != nil {
		return 0
	}
	return rv
}

func widgetKey(u *unstructured.Unstructured) string {
	return u.GetNamespace() + "/" + u.GetName()
}

// serverState lists every widget from the server.
func serverState(t *testing.T, client dynamic.Interface) widgetState {
	t.Helper()
	return serverStateSelected(t, client, "")
}

// serverStateSelected lists the widgets matching labelSelector.
func serverStateSelected(t *testing.T, client dynamic.Interface, labelSelector string) widgetState {
	t.Helper()
	list, err := client.Resource(apiserver.WidgetGVR).List(context.Background(), metav1.ListOptions{LabelSelector: labelSelector})
	if err != nil {
		t.Fatalf("list widgets: %v", err)
	}
	state := widgetState{}
	for i := range list.Items {
		state[widgetKey(&list.Items[i])] = parseRV(&list.Items[i])
	}
	return state
}

// cacheState reads an informer's store.
func cacheState(informer clientcache.SharedIndexInformer) (widgetState, error) {
	state := widgetState{}
	for _, obj := range informer.GetStore().List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("store holds %T", obj)
		}
		state[widgetKey(u)] = parseRV(u)
	}
	return state, nil
}

// diff describes how got differs from want, or is empty when they match.
func (want widgetState) diff(got widgetState) string {
	var out []string
	for k, rv := range want {
		if g, ok := got[k]; !ok {
			out = append(out, fmt.Sprintf("missing %s@%d", k, rv))
		} else if g != rv {
			out = append(out, fmt.Sprintf("%s at %d, want %d", k, g, rv))
		}
	}
	for k, rv := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("extra %s@%d", k, rv))
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("... %d differences", len(out)))
	}
	return strings.Join(out, "; ")
}

// waitConverged waits until every informer's store equals the server's list,
// then checks each handler's history against it.
func waitConverged(t *testing.T, client dynamic.Interface, runs []*informerRun) widgetState {
	t.Helper()
	want := serverState(t, client)
	waitConvergedTo(t, want, runs)
	return want
}

// waitConvergedTo waits until every informer's store equals want, then
// checks each handler's history against it.
func waitConvergedTo(t *testing.T, want widgetState, runs []*informerRun) {
	t.Helper()
	for _, run := range runs {
		eventually(t, 2*time.Minute, run.impl.name+" cache equals server", func() (bool, string) {
			got, err := cacheState(run.informer)
			if err != nil {
				return false, err.Error()
			}
			d := want.diff(got)
			return d == "", d
		})
		for i, rec := range append([]*eventRecorder{run.recorder}, run.late...) {
			name := fmt.Sprintf("%s handler %d", run.impl.name, i)
			eventually(t, time.Minute, name+" reached final state", func() (bool, string) {
				d := rec.finalStateDiff(want)
				return d == "", d
			})
			for _, problem := range rec.orderProblems() {
				t.Errorf("%s: %s", name, problem)
			}
		}
	}
}

// addLateHandler adds a recording handler to the running informer.
func (run *informerRun) addLateHandler(t *testing.T) {
	t.Helper()
	rec := newEventRecorder()
	if _, err := run.informer.AddEventHandler(rec); err != nil {
		t.Fatalf("%s: add handler while running: %v", run.impl.name, err)
	}
	run.late = append(run.late, rec)
}

// writeLog records, per key, every resource version a writer produced and
// when the request for it was sent.
type writeLog struct {
	mu   sync.Mutex
	rvs  map[string][]uint64
	sent map[writtenVersion]time.Time
}

type writtenVersion struct {
	key string
	rv  uint64
}

func (w *writeLog) add(u *unstructured.Unstructured, sent time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key, rv := widgetKey(u), parseRV(u)
	w.rvs[key] = append(w.rvs[key], rv)
	w.sent[writtenVersion{key, rv}] = sent
}

// workload creates, updates and deletes widgets from several goroutines.
// Each key belongs to one goroutine, so its writes are ordered.
type workload struct {
	namespaces  []string
	prefix      string
	objects     int
	writers     int
	updates     int // updates per object after its create
	deleteEvery int // every n-th object is deleted at the end; 0: none
	payload     int // bytes of filler in spec.data
}

func (wl workload) run(t *testing.T, client dynamic.Interface) *writeLog {
	t.Helper()
	log := wl.write(t, client)
	if t.Failed() {
		t.FailNow()
	}
	return log
}

// write runs the workload and reports failures with t.Errorf only, so it
// may run outside the test's goroutine.
func (wl workload) write(t *testing.T, client dynamic.Interface) *writeLog {
	log := &writeLog{rvs: map[string][]uint64{}, sent: map[writtenVersion]time.Time{}}
	var wg sync.WaitGroup
	for w := 0; w < wl.writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := wl.writer(client, w, log); err != nil {
				t.Errorf("writer %d: %v", w, err)
			}
		}()
	}
	wg.Wait()
	return log
}

func (wl workload) writer(client dynamic.Interface, w int, log *writeLog) error {
	ctx := context.Background()
	var mine []*unstructured.Unstructured
	for i := w; i < wl.objects; i += wl.writers {
		ns := wl.namespaces[i%len(wl.namespaces)]
		obj := apiserver.NewWidget(ns, fmt.Sprintf("%s-%d", wl.prefix, i), 0)
		obj.SetLabels(map[string]string{"parity": strconv.Itoa(i % 2)})
		if wl.payload > 0 {
			if err := unstructured.SetNestedField(obj.Object, strings.Repeat("x", wl.payload), "spec", "data"); err != nil {
				return err
			}
		}
		sent := time.Now()
		created, err := client.Resource(apiserver.WidgetGVR).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		log.add(created, sent)
		mine = append(mine, created)
	}
	for u := 1; u <= wl.updates; u++ {
		for j, obj := range mine {
			if err := unstructured.SetNestedField(obj.Object, int64(u), "spec", "value"); err != nil {
				return err
			}
			sent := time.Now()
			updated, err := client.Resource(apiserver.WidgetGVR).Namespace(obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{})
			if err != nil {
				return err
			}
			log.add(updated, sent)
			mine[j] = updated
		}
	}
	for j, obj := range mine {
		if wl.deleteEvery == 0 || (j*wl.writers+w)%wl.deleteEvery != 0 {
			continue
		}
		if err := client.Resource(apiserver.WidgetGVR).Namespace(obj.GetNamespace()).Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	return nil
}
