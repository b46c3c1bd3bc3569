package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientcache "k8s.io/client-go/tools/cache"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/integration/apiserver"
	"github.com/openinformer/cache/sharding"
)

// The rebalancing test's membership timing: LeaseDuration scaled down from the 15s default
// to 3s, the other two derived from it as by default.
const (
	rebalanceLease   = 3 * time.Second
	rebalanceRenew   = time.Second
	rebalanceHandoff = 2 * time.Second
	// rebalanceSlack covers an informer's sync on a new shard and the watch latency of a
	// widget just written, which the bounds handed out by Membership do not count: on a
	// loaded 2-core machine a replica took up to 3s to sync its ~200 widgets.
	rebalanceSlack = 4 * time.Second
)

// registerLeaseCRD serves coordination.k8s.io/v1 Leases as a custom resource: the
// apiextensions API server has no built-in Lease API, and Membership needs only Leases'
// JSON, labels and list by label selector.
func registerLeaseCRD(t *testing.T, srv *apiserver.Server) {
	t.Helper()
	crds, err := clientset.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "leases.coordination.k8s.io",
			Annotations: map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: "unapproved, test only"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "coordination.k8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "leases", Singular: "lease", Kind: "Lease", ListKind: "LeaseList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: &preserve}},
				}},
			}},
		},
	}
	ctx := context.Background()
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kube := leaseClient(srv)
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("Leases not served: %v", err)
	}
}

// leaseClient is a clientset on srv that speaks JSON: custom resources have no protobuf.
func leaseClient(srv *apiserver.Server) kubernetes.Interface {
	config := srv.Config()
	config.ContentType, config.AcceptContentTypes = "application/json", "application/json"
	return kubernetes.NewForConfigOrDie(config)
}

// ownershipMeter samples, for every widget an unsharded informer holds, how many replicas'
// live caches hold it, and keeps the longest time a widget went without any (gap) or with
// several (overlap).
type ownershipMeter struct {
	truth    clientcache.SharedIndexInformer
	mu       sync.Mutex
	replicas map[string]*sharding.MembershipInformer
	since    map[string]ownershipRun // widget -> the run it is in, if unowned or shared
	maxGap   time.Duration
	maxShare time.Duration
}

type ownershipRun struct {
	start  time.Time
	shared bool
}

func (m *ownershipMeter) sample(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, key := range m.truth.GetStore().ListKeys() {
		owners := 0
		for _, r := range m.replicas {
			if _, ok, _ := r.GetStore().GetByKey(key); ok {
				owners++
			}
		}
		run, inRun := m.since[key]
		if inRun && (owners == 1 || run.shared != (owners > 1)) {
			m.end(run, now)
			delete(m.since, key)
			inRun = false
		}
		if !inRun && owners != 1 {
			m.since[key] = ownershipRun{start: now, shared: owners > 1}
		}
	}
}

func (m *ownershipMeter) end(run ownershipRun, now time.Time) {
	if run.shared {
		m.maxShare = max(m.maxShare, now.Sub(run.start))
	} else {
		m.maxGap = max(m.maxGap, now.Sub(run.start))
	}
}

// phase returns the phase's longest gap and overlap, counting runs still open, and starts
// the next phase.
func (m *ownershipMeter) phase(now time.Time) (gap, share time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, run := range m.since {
		m.end(run, now)
	}
	gap, share = m.maxGap, m.maxShare
	m.maxGap, m.maxShare, m.since = 0, 0, map[string]ownershipRun{}
	return gap, share
}

func (m *ownershipMeter) run(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			m.sample(now)
		}
	}
}

// rebalanceGroup runs MembershipInformers on the real server, each with its own stop.
type rebalanceGroup struct {
	t      *testing.T
	client dynamic.Interface
	kube   kubernetes.Interface
	meter  *ownershipMeter
	stops  map[string]func()
}

func (g *rebalanceGroup) start(id string) {
	mi, err := sharding.NewMembershipInformer(widgetListWatch(g.client, ""), &unstructured.Unstructured{}, 0, cache.Indexers{}, sharding.MembershipOptions{
		Client: g.kube, Namespace: "default", Group: "widgets", Identity: id,
		LeaseDuration: rebalanceLease, RenewInterval: rebalanceRenew, Handover: rebalanceHandoff,
	})
	if err != nil {
		g.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		mi.Run(ctx)
	}()
	g.meter.mu.Lock()
	g.meter.replicas[id] = mi
	g.meter.mu.Unlock()
	g.stops[id] = func() {
		cancel()
		<-done
		g.meter.mu.Lock()
		delete(g.meter.replicas, id)
		g.meter.mu.Unlock()
	}
	g.t.Cleanup(func() {
		if stop := g.stops[id]; stop != nil {
			stop()
		}
	})
}

func (g *rebalanceGroup) stop(id string) {
	g.stops[id]()
	delete(g.stops, id)
}

// steadyWriter creates and updates widgets at about rate writes a second until ctx ends.
func steadyWriter(ctx context.Context, t *testing.T, client dynamic.Interface, rate int) func() int {
	var wg sync.WaitGroup
	var writes int
	wg.Go(func() {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		widgets := client.Resource(apiserver.WidgetGVR)
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			ns := testNamespaces[(i/2)%len(testNamespaces)]
			var err error
			if i%2 == 0 {
				_, err = widgets.Namespace(ns).Create(ctx, apiserver.NewWidget(ns, fmt.Sprintf("steady-%05d", i), 0), metav1.CreateOptions{})
			} else {
				_, err = widgets.Namespace(ns).Patch(ctx, fmt.Sprintf("steady-%05d", i-1), types.MergePatchType, []byte(`{"spec":{"value":1}}`), metav1.PatchOptions{})
			}
			if err != nil && ctx.Err() == nil {
				t.Errorf("steady write %d: %v", i, err)
				return
			}
			writes++
		}
	})
	return func() int {
		wg.Wait()
		return writes
	}
}

func TestShardRebalancing(t *testing.T) {
	for _, gate := range []bool{true, false} {
		t.Run(fmt.Sprintf("ShardedListAndWatch=%v", gate), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ShardedListAndWatch, gate)
			checkShardRebalancing(t, gate)
		})
	}
}

// checkShardRebalancing goes from 3 replicas to 4 and back under a steady write load and
// asserts the longest ownership gap and overlap against Membership's bounds.
func checkShardRebalancing(t *testing.T, gate bool) {
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	registerLeaseCRD(t, srv)
	client := srv.Dynamic()
	workload{namespaces: testNamespaces, prefix: "base", objects: scaled(600), writers: 6, payload: 512}.run(t, client)
	truth := cache.NewSharedIndexInformer(widgetListWatch(client, ""), &unstructured.Unstructured{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { truth.RunWithContext(ctx) })
	meter := &ownershipMeter{truth: truth, replicas: map[string]*sharding.MembershipInformer{}, since: map[string]ownershipRun{}}
	g := &rebalanceGroup{t: t, client: client, kube: leaseClient(srv), meter: meter, stops: map[string]func(){}}
	for _, id := range []string{"r0", "r1", "r2"} {
		g.start(id)
	}
	eventually(t, time.Minute, "3 replicas partition the widgets", func() (bool, string) {
		d := membershipPartitionDiff(serverState(t, client), meter)
		return d == "", d
	})
	wg.Go(func() { meter.run(ctx) })
	writeCtx, stopWriting := context.WithCancel(ctx)
	writes := steadyWriter(writeCtx, t, client, 20)
	settle := 2*rebalanceRenew + rebalanceHandoff + rebalanceSlack
	time.Sleep(settle)
	meter.phase(time.Now())

	g.start("r3")
	time.Sleep(settle)
	joinGap, joinShare := meter.phase(time.Now())
	meter.mu.Lock()
	joined := len(meter.replicas["r3"].GetStore().ListKeys())
	meter.mu.Unlock()
	if joined == 0 {
		t.Error("the fourth replica took over nothing")
	}
	g.stop("r3")
	time.Sleep(settle)
	leaveGap, leaveShare := meter.phase(time.Now())
	stopWriting()
	n := writes()
	t.Logf("gate %v: 3->4 replicas: longest gap %v, overlap %v; 4->3: longest gap %v, overlap %v (%d writes at 20/s, LeaseDuration %v, RenewInterval %v, Handover %v)",
		gate, joinGap.Round(time.Millisecond), joinShare.Round(time.Millisecond), leaveGap.Round(time.Millisecond), leaveShare.Round(time.Millisecond),
		n, rebalanceLease, rebalanceRenew, rebalanceHandoff)
	// A change may wait for two informer syncs' time: the union's sync, and then, before the
	// shrink at the Handover's end narrows it, as long as that sync took.
	overlapBound := rebalanceRenew + rebalanceHandoff + 3*rebalanceSlack
	for _, c := range []struct {
		what       string
		gap, share time.Duration
	}{{"a join", joinGap, joinShare}, {"a graceful leave", leaveGap, leaveShare}} {
		if c.gap > rebalanceSlack {
			t.Errorf("%s left a widget without a synced owner for %v, bound %v", c.what, c.gap, rebalanceSlack)
		}
		if c.share > overlapBound {
			t.Errorf("%s's overlap was %v, bound %v", c.what, c.share, overlapBound)
		}
	}
	eventually(t, time.Minute, "3 replicas partition the widgets again", func() (bool, string) {
		d := membershipPartitionDiff(serverState(t, client), meter)
		return d == "", d
	})
}

// membershipPartitionDiff compares the union of the replicas' live caches with want,
// requiring each widget on exactly one replica.
func membershipPartitionDiff(want widgetState, m *ownershipMeter) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	union := widgetState{}
	for id, r := range m.replicas {
		if !r.HasSynced() {
			return id + " not synced"
		}
		for _, obj := range r.GetStore().List() {
			u := obj.(*unstructured.Unstructured)
			if _, dup := union[widgetKey(u)]; dup {
				return fmt.Sprintf("%s cached by several replicas (also %s)", widgetKey(u), id)
			}
			union[widgetKey(u)] = parseRV(u)
		}
	}
	return want.diff(union)
}
