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
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientcache "k8s.io/client-go/tools/cache"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	clocktesting "k8s.io/utils/clock/testing"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/integration/apiserver"
	"github.com/openinformer/cache/sharding"
)

// The rebalancing test's membership timing: LeaseDuration scaled down from the 15s default
// to 3s, the other two derived from it as by default. The Memberships run on a fake clock that
// the test steps, so these durations pass only when the test has seen what it waits for: a
// slow sync stretches the test, never the protocol.
const (
	rebalanceLease   = 3 * time.Second
	rebalanceRenew   = time.Second
	rebalanceHandoff = 2 * time.Second
	// rebalanceWait bounds each wait for the replicas to reach a state: a deadline for a
	// broken run, not a timing the test relies on.
	rebalanceWait = 3 * time.Minute
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

// ownershipMeter samples, for every widget an unsharded informer holds, how many replicas
// serve it: those whose live generation has synced and whose shard holds the widget's hash.
// It counts the samples that found a widget served by none (a gap in ownership; the watch
// latency of a widget just written is not one) and keeps the longest run of a widget served by
// none or by several (overlap), in real time.
type ownershipMeter struct {
	truth    clientcache.SharedIndexInformer
	mu       sync.Mutex
	replicas map[string]*sharding.MembershipInformer
	since    map[string]ownershipRun // widget -> the run it is in, if unowned or shared
	gaps     int                     // samples with an unserved widget
	gapKey   string                  // one such widget, for the failure message
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
	var serving []apisharding.Selector
	for _, r := range m.replicas {
		if lw := r.ListWatch(); lw != nil && r.HasSynced() {
			serving = append(serving, lw.Selector())
		}
	}
	gap := false
	for _, obj := range m.truth.GetStore().List() {
		u := obj.(*unstructured.Unstructured)
		owners := 0
		for _, sel := range serving {
			if ok, err := sel.Matches(u); ok || err != nil {
				owners++
			}
		}
		key := widgetKey(u)
		if owners == 0 {
			gap, m.gapKey = true, key
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
	if gap {
		m.gaps++
	}
}

func (m *ownershipMeter) end(run ownershipRun, now time.Time) {
	if run.shared {
		m.maxShare = max(m.maxShare, now.Sub(run.start))
	} else {
		m.maxGap = max(m.maxGap, now.Sub(run.start))
	}
}

// ownershipPhase is what the meter saw during one phase.
type ownershipPhase struct {
	gapSamples   int
	gapKey       string
	gap, overlap time.Duration
}

// phase returns the phase's figures, counting runs still open, and starts the next phase.
func (m *ownershipMeter) phase(now time.Time) ownershipPhase {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, run := range m.since {
		m.end(run, now)
	}
	p := ownershipPhase{gapSamples: m.gaps, gapKey: m.gapKey, gap: m.maxGap, overlap: m.maxShare}
	m.gaps, m.gapKey, m.maxGap, m.maxShare, m.since = 0, "", 0, 0, map[string]ownershipRun{}
	return p
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

// rebalanceGroup runs MembershipInformers on the real server, their Memberships on one fake
// clock that only the group steps.
type rebalanceGroup struct {
	t        *testing.T
	client   dynamic.Interface
	kube     kubernetes.Interface
	clock    *clocktesting.FakeClock
	meter    *ownershipMeter
	replicas map[string]*rebalanceReplica
	tickers  int // Memberships ever started: a fake ticker stays a waiter of the clock
}

type rebalanceReplica struct {
	mi       *sharding.MembershipInformer
	cancel   func()
	done     chan struct{}
	leaving  bool
	joinedAt time.Time // real time, for the log
}

func newRebalanceGroup(t *testing.T, client dynamic.Interface, kube kubernetes.Interface, meter *ownershipMeter) *rebalanceGroup {
	g := &rebalanceGroup{t: t, client: client, kube: kube, meter: meter, replicas: map[string]*rebalanceReplica{},
		clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second))}
	t.Cleanup(g.stopAll)
	return g
}

// start runs replica id and waits for its first membership step, which renews its Lease at
// the clock's time.
func (g *rebalanceGroup) start(id string) {
	g.t.Helper()
	mi, err := sharding.NewMembershipInformer(widgetListWatch(g.client, ""), &unstructured.Unstructured{}, 0, cache.Indexers{}, sharding.MembershipOptions{
		Client: g.kube, Namespace: "default", Group: "widgets", Identity: id,
		LeaseDuration: rebalanceLease, RenewInterval: rebalanceRenew, Handover: rebalanceHandoff, Clock: g.clock,
	})
	if err != nil {
		g.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &rebalanceReplica{mi: mi, cancel: cancel, done: make(chan struct{}), joinedAt: time.Now()}
	go func() {
		defer close(r.done)
		mi.Run(ctx)
	}()
	g.replicas[id] = r
	g.tickers++
	g.meter.mu.Lock()
	g.meter.replicas[id] = mi
	g.meter.mu.Unlock()
	g.awaitWaiters(g.tickers, id+"'s Membership running")
	g.awaitRenewals()
}

// awaitWaiters waits until the fake clock has n waiters: one ticker per Membership started,
// and one more for each Membership waiting out its Handover after leaving.
func (g *rebalanceGroup) awaitWaiters(n int, what string) {
	g.t.Helper()
	eventually(g.t, rebalanceWait, what, func() (bool, string) {
		got := g.clock.Waiters()
		return got == n, fmt.Sprintf("%d waiters on the membership clock, want %d", got, n)
	})
}

// tick moves the membership clock one RenewInterval on and waits until every member has
// renewed its Lease at the new time; what each then does with the group it lists is awaited
// by the caller, as a state of the replicas.
func (g *rebalanceGroup) tick() {
	g.t.Helper()
	g.clock.Step(rebalanceRenew)
	g.awaitRenewals()
}

func (g *rebalanceGroup) awaitRenewals() {
	g.t.Helper()
	now := g.clock.Now()
	eventually(g.t, rebalanceWait, "Leases renewed at "+now.Format(time.TimeOnly), func() (bool, string) {
		leases, err := g.kube.CoordinationV1().Leases("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		renewed := map[string]bool{}
		for _, l := range leases.Items {
			if l.Spec.HolderIdentity != nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.Equal(now) {
				renewed[*l.Spec.HolderIdentity] = true
			}
		}
		for id, r := range g.replicas {
			if !r.leaving && !renewed[id] {
				return false, id + " has not renewed"
			}
		}
		return true, ""
	})
}

// awaitShards waits until each replica named in want serves, synced, exactly the ranges
// given, in the order Membership hands them out.
func (g *rebalanceGroup) awaitShards(what string, want map[string][]sharding.Range) {
	g.t.Helper()
	selectors := map[string]string{}
	for id, ranges := range want {
		sel, err := sharding.Shard{Ranges: ranges}.Selector()
		if err != nil {
			g.t.Fatal(err)
		}
		selectors[id] = sel.String()
	}
	eventually(g.t, rebalanceWait, what, func() (bool, string) {
		for id, sel := range selectors {
			mi := g.replicas[id].mi
			lw := mi.ListWatch()
			switch {
			case lw == nil:
				return false, id + " has no shard yet"
			case lw.Selector().String() != sel:
				return false, fmt.Sprintf("%s serves %q, want %q", id, lw.Selector(), sel)
			case !mi.HasSynced():
				return false, id + " has not synced"
			}
		}
		return true, ""
	})
}

// leave cancels replica id: it deletes its Lease and waits out its Handover on the clock.
func (g *rebalanceGroup) leave(id string) {
	g.t.Helper()
	r := g.replicas[id]
	r.leaving = true
	r.cancel()
	g.awaitWaiters(g.tickers+1, id+" leaving: Lease deleted, Handover begun")
}

// awaitGone waits until replica id's Run has returned and takes it out of the meter.
func (g *rebalanceGroup) awaitGone(id string) {
	g.t.Helper()
	r := g.replicas[id]
	eventually(g.t, rebalanceWait, id+" stopped", func() (bool, string) {
		select {
		case <-r.done:
			return true, ""
		default:
			return false, "Run has not returned"
		}
	})
	delete(g.replicas, id)
	g.meter.mu.Lock()
	delete(g.meter.replicas, id)
	g.meter.mu.Unlock()
}

// stopAll cancels every replica still running and steps the clock past their Handovers
// until they have all returned; the group's state no longer matters then.
func (g *rebalanceGroup) stopAll() {
	for _, r := range g.replicas {
		r.cancel()
	}
	eventually(g.t, rebalanceWait, "replicas stopped", func() (bool, string) {
		for id, r := range g.replicas {
			select {
			case <-r.done:
			default:
				g.clock.Step(rebalanceHandoff)
				return false, id + " still running"
			}
		}
		return true, ""
	})
}

// evenShards is the steady state of n members: member i serves range i of n.
func evenShards(t *testing.T, ids []string) map[string][]sharding.Range {
	t.Helper()
	want := map[string][]sharding.Range{}
	for i, id := range ids {
		want[id] = []sharding.Range{evenRange(t, i, len(ids))}
	}
	return want
}

// handoverShards is what the first n of members serve during the handover from n to m
// members: their range of n, then their range of m, unless those are the same.
func handoverShards(t *testing.T, ids []string, n, m int) map[string][]sharding.Range {
	t.Helper()
	want := map[string][]sharding.Range{}
	for i, id := range ids[:min(n, m)] {
		from, to := evenRange(t, i, n), evenRange(t, i, m)
		want[id] = []sharding.Range{from}
		if to != from {
			want[id] = append(want[id], to)
		}
	}
	return want
}

func evenRange(t *testing.T, i, n int) sharding.Range {
	t.Helper()
	r, err := sharding.EvenRange(i, n)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// steadyWriter creates and updates widgets at about rate writes a second until ctx ends.
func steadyWriter(ctx context.Context, t *testing.T, client dynamic.Interface, rate int, prefix string) func() int {
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
				_, err = widgets.Namespace(ns).Create(ctx, apiserver.NewWidget(ns, fmt.Sprintf("%s-%05d", prefix, i), 0), metav1.CreateOptions{})
			} else {
				_, err = widgets.Namespace(ns).Patch(ctx, fmt.Sprintf("%s-%05d", prefix, i-1), types.MergePatchType, []byte(`{"spec":{"value":1}}`), metav1.PatchOptions{})
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

// checkShardRebalancing goes from 3 replicas to 4 and back under a steady write load. The
// membership clock moves only once the replicas have done what the previous step asked of
// them, so the test does not depend on how fast the machine is: no widget may ever be
// left without a replica that serves it, and after each change the replicas partition the
// widgets.
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
	g := newRebalanceGroup(t, client, leaseClient(srv), meter)
	three, four := []string{"r0", "r1", "r2"}, []string{"r0", "r1", "r2", "r3"}
	for _, id := range three {
		g.start(id)
	}
	// r0 started alone and r1 with r0: within one Handover of the first tick all see three.
	for range rebalanceHandoff/rebalanceRenew + 1 {
		g.tick()
	}
	g.awaitShards("3 replicas on their ranges", evenShards(t, three))
	eventually(t, rebalanceWait, "3 replicas partition the widgets", func() (bool, string) {
		d := membershipPartitionDiff(serverState(t, client), meter)
		return d == "", d
	})
	if !cache.WaitForCacheSync(ctx.Done(), truth.HasSynced) {
		t.Fatal("the unsharded informer did not sync")
	}
	wg.Go(func() { meter.run(ctx) })
	meter.phase(time.Now())

	// A join: r3's first step takes its range; at the next tick the others see it and serve
	// their old and new ranges; the tick that ends their Handover shrinks them to the new.
	stopWriting := startSteadyWriter(ctx, t, client, "join")
	g.start("r3")
	g.tick()
	during := handoverShards(t, four, 3, 4)
	during["r3"] = []sharding.Range{evenRange(t, 3, 4)}
	g.awaitShards("r3 synced, the others on their old and new ranges", during)
	joinedAfter := time.Since(g.replicas["r3"].joinedAt)
	g.tick()
	g.tick()
	g.awaitShards("4 replicas on their ranges", evenShards(t, four))
	joinWrites := stopWriting()
	eventually(t, rebalanceWait, "4 replicas partition the widgets", func() (bool, string) {
		d := membershipPartitionDiff(serverState(t, client), meter)
		return d == "", d
	})
	join := meter.phase(time.Now())
	r3Keys, total := len(g.replicas["r3"].mi.GetStore().ListKeys()), len(truth.GetStore().ListKeys())
	if r3Keys < total/8 || r3Keys > total*3/8 {
		t.Errorf("the fourth replica holds %d of %d widgets, want about a quarter", r3Keys, total)
	}
	wantMode := sharding.ModeServer
	if !gate {
		wantMode = sharding.ModeClient // the server ignores the selector: the replica filters
	}
	if m := g.replicas["r3"].mi.ListWatch().Mode(); m != wantMode {
		t.Errorf("the fourth replica filters in mode %v, want %v", m, wantMode)
	}

	// A graceful leave: r3 deletes its Lease and keeps serving for its Handover; the others
	// see three at the next tick, serve their old and new ranges, and shrink when theirs ends.
	stopWriting = startSteadyWriter(ctx, t, client, "leave")
	g.leave("r3")
	g.tick()
	g.awaitShards("the others on their old and new ranges", handoverShards(t, four, 4, 3))
	g.tick()
	g.awaitGone("r3")
	g.tick()
	g.awaitShards("3 replicas on their ranges again", evenShards(t, three))
	leaveWrites := stopWriting()
	eventually(t, rebalanceWait, "3 replicas partition the widgets again", func() (bool, string) {
		d := membershipPartitionDiff(serverState(t, client), meter)
		return d == "", d
	})
	leave := meter.phase(time.Now())

	t.Logf("gate %v (filtering: %v): r3 held %d of %d widgets after the join; r3 synced its range %v after starting; overlap %v on the join, %v on the leave (real time; the membership clock waited for the syncs); %d+%d writes at 20/s",
		gate, wantMode, r3Keys, total, joinedAfter.Round(time.Millisecond), join.overlap.Round(time.Millisecond), leave.overlap.Round(time.Millisecond), joinWrites, leaveWrites)
	for _, c := range []struct {
		what string
		p    ownershipPhase
	}{{"a join", join}, {"a graceful leave", leave}} {
		if c.p.gapSamples > 0 {
			t.Errorf("%s left widgets without a replica serving them in %d samples (%s among them), for up to %v", c.what, c.p.gapSamples, c.p.gapKey, c.p.gap)
		}
	}
}

// startSteadyWriter runs steadyWriter at 20 writes a second until the returned stop, which
// returns how many writes it made.
func startSteadyWriter(ctx context.Context, t *testing.T, client dynamic.Interface, prefix string) (stop func() int) {
	writeCtx, cancel := context.WithCancel(ctx)
	writes := steadyWriter(writeCtx, t, client, 20, prefix)
	return func() int {
		cancel()
		return writes()
	}
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
