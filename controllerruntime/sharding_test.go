package crcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/sharding"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Membership timings of the Lease-sharding tests.
const (
	testLease    = 15 * time.Second
	testRenew    = 5 * time.Second
	testHandover = 10 * time.Second
)

// leaseReplica is one manager's cache in a Lease-sharded group.
type leaseReplica struct {
	id    string
	cache crcache.Cache
	stop  context.CancelFunc
	done  chan error
}

// startLeaseReplica starts a cache whose pods are Lease-sharded in group
// "ctrl" on leases, with compact storage, and waits for its pod informer.
func startLeaseReplica(t *testing.T, srv *fake.Server, leases *k8sfake.Clientset, id string, series cache.HandlerMetricsProvider) *leaseReplica {
	t.Helper()
	ours := Options{HandlerMetrics: series, ByObject: map[client.Object]InformerOptions{&corev1.Pod{}: {
		Compact: &cache.CompactOptions{}, StripManagedFields: true,
		Membership: &sharding.MembershipOptions{Client: leases, Namespace: "kube-system", Group: "ctrl", Identity: id,
			LeaseDuration: testLease, RenewInterval: testRenew, Handover: testHandover},
	}}}
	c, err := newCache(&rest.Config{Host: "http://127.0.0.1:1"}, crcache.Options{Mapper: testMapper()}, ours, fakeSource{srv}.listWatch)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &leaseReplica{id: id, cache: c, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Start(ctx) }()
	if _, err := c.GetInformer(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	// An index added at run time, which the generations the shard moves to must keep.
	if err := c.IndexField(ctx, &corev1.Pod{}, "name", func(o client.Object) []string { return []string{o.GetName()} }); err != nil {
		t.Fatal(err)
	}
	return r
}

// settle lets the group's Leases and handovers run their course.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// assertPartition requires every pod on the server to be read by exactly
// one replica, and the others to answer as for a pod that does not
// exist: NotFound for Get, absent from List, with or without a label or
// field selector.
func assertPartition(t *testing.T, what string, srv *fake.Server, replicas ...*leaseReplica) {
	t.Helper()
	owners := map[string][]string{}
	labelled := map[string]int{}
	for _, r := range replicas {
		var all, withLabel corev1.PodList
		if err := r.cache.List(context.Background(), &all); err != nil {
			t.Fatal(err)
		}
		if err := r.cache.List(context.Background(), &withLabel, client.MatchingLabels{"app": "x"}); err != nil {
			t.Fatal(err)
		}
		if len(all.Items) == 0 {
			t.Errorf("%s: %s caches no pod", what, r.id)
		}
		for _, key := range names(t, &all) {
			owners[key] = append(owners[key], r.id)
		}
		for _, key := range names(t, &withLabel) {
			labelled[key]++
		}
	}
	for _, obj := range srv.Objects() {
		p := obj.(*corev1.Pod)
		key := p.Namespace + "/" + p.Name
		if len(owners[key]) != 1 {
			t.Errorf("%s: %s listed by %v, want exactly one replica", what, key, owners[key])
			continue
		}
		if p.Labels["app"] == "x" && labelled[key] != 1 {
			t.Errorf("%s: %s in %d label-selected lists, want 1", what, key, labelled[key])
		}
		byField := 0
		for _, r := range replicas {
			var list corev1.PodList
			if err := r.cache.List(context.Background(), &list, client.InNamespace(p.Namespace), client.MatchingFields{"name": p.Name}); err != nil {
				t.Fatal(err)
			}
			byField += len(list.Items)
		}
		if byField != 1 {
			t.Errorf("%s: %s in %d field-selected lists, want 1", what, key, byField)
		}
		for _, r := range replicas {
			err := r.cache.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{})
			switch owns := owners[key][0] == r.id; {
			case owns && err != nil:
				t.Errorf("%s: %s: Get %s: %v", what, r.id, key, err)
			case !owns && !apierrors.IsNotFound(err):
				t.Errorf("%s: %s: Get %s of another shard: %v, want NotFound", what, r.id, key, err)
			}
		}
	}
	if len(owners) != len(srv.Objects()) {
		t.Errorf("%s: %d pods listed, the server has %d", what, len(owners), len(srv.Objects()))
	}
}

// TestLeaseShardedCachesSplitAType: two managers' caches on one Lease API
// split the pods between them, none in both and none in neither once the
// handover is over; a third joining takes its share from both.
func TestLeaseShardedCachesSplitAType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pods []*corev1.Pod
		for i := range 60 {
			pods = append(pods, pod(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("p%02d", i), map[string]string{"app": []string{"x", "y"}[i%2]}))
		}
		srv := newPodServer(t, pods...)
		leases := k8sfake.NewClientset()
		series := &handlerSeries{}
		a := startLeaseReplica(t, srv, leases, "a", series)
		b := startLeaseReplica(t, srv, leases, "b", nil)
		settle(2*testRenew + testHandover)
		assertPartition(t, "a and b", srv, a, b)
		assertLeaseGroup(t, leases, "ctrl-pods", "a", "b")
		for _, from := range []crcache.Cache{a.cache, ForController(a.cache, "replicaset")} {
			inf, err := from.GetInformer(context.Background(), &corev1.Pod{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
				t.Fatal(err)
			}
		}
		// Besides the handlers, a narrowed generation runs a sweeper of its own.
		got := slices.DeleteFunc(series.sorted(), func(s string) bool { return strings.HasSuffix(s, "sharding.shardSweeper") })
		if want := []string{"handler", "replicaset"}; !slices.Equal(got, want) {
			t.Errorf("a Lease-sharded informer's handler series %q, want %q", got, want)
		}

		c := startLeaseReplica(t, srv, leases, "c", nil)
		if _, err := srv.Create(pod("ns0", "late", map[string]string{"app": "x"})); err != nil {
			t.Fatal(err)
		}
		settle(2*testRenew + testHandover)
		assertPartition(t, "a, b and c", srv, a, b, c)

		for _, r := range []*leaseReplica{a, b, c} {
			r.stop()
		}
		for _, r := range []*leaseReplica{a, b, c} {
			if err := <-r.done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s: Start: %v", r.id, err)
			}
		}
		assertLeaseGroup(t, leases, "ctrl-pods")
	})
}

// assertLeaseGroup requires the Leases of group to be those of ids: each
// informer takes part under the group derived for it.
func assertLeaseGroup(t *testing.T, leases *k8sfake.Clientset, group string, ids ...string) {
	t.Helper()
	list, err := leases.CoordinationV1().Leases("kube-system").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range list.Items {
		got = append(got, l.Name)
	}
	var want []string
	for _, id := range ids {
		want = append(want, group+"-"+id)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Leases %v, want %v", got, want)
	}
}

// TestMembershipOptionsCheckedAtNew: combinations the cache cannot honour
// and incomplete Lease settings fail New, not the first read.
func TestMembershipOptionsCheckedAtNew(t *testing.T) {
	complete := sharding.MembershipOptions{Client: k8sfake.NewClientset(), Namespace: "kube-system", Group: "ctrl", Identity: "a"}
	without := func(change func(*sharding.MembershipOptions)) *sharding.MembershipOptions {
		m := complete
		change(&m)
		return &m
	}
	for name, tc := range map[string]struct {
		opts InformerOptions
		want string
	}{
		"shard too":    {InformerOptions{Membership: &complete, Shard: &sharding.Shard{Count: 2}}, "Shard and Membership"},
		"snapshot too": {InformerOptions{Membership: &complete, Snapshot: true}, "Snapshot and Membership"},
		"no client":    {InformerOptions{Membership: without(func(m *sharding.MembershipOptions) { m.Client = nil })}, "missing Client"},
		"no namespace": {InformerOptions{Membership: without(func(m *sharding.MembershipOptions) { m.Namespace = "" })}, "missing Namespace"},
		"no group":     {InformerOptions{Membership: without(func(m *sharding.MembershipOptions) { m.Group = "" })}, "missing Group"},
		"no identity":  {InformerOptions{Membership: without(func(m *sharding.MembershipOptions) { m.Identity = "" })}, "missing Identity"},
		"on change":    {InformerOptions{Membership: without(func(m *sharding.MembershipOptions) { m.OnChange = func(sharding.Shard) {} })}, "OnChange"},
	} {
		for where, ours := range map[string]Options{
			"Defaults": {Defaults: tc.opts},
			"ByObject": {ByObject: map[client.Object]InformerOptions{&corev1.Pod{}: tc.opts}},
		} {
			_, err := New(ours)(&rest.Config{Host: "http://127.0.0.1:1"}, crcache.Options{Mapper: testMapper()})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), where) {
				t.Errorf("%s in %s: %v, want an error about %q", name, where, err, tc.want)
			}
		}
	}
	if _, err := New(Options{Defaults: InformerOptions{Membership: &complete}})(&rest.Config{Host: "http://127.0.0.1:1"}, crcache.Options{Mapper: testMapper()}); err != nil {
		t.Errorf("complete Membership: %v", err)
	}
}

// TestLeaseGroupsAreDistinctLabelValues: each informer's group names its
// type, representation and namespace, and fits a label value.
func TestLeaseGroupsAreDistinctLabelValues(t *testing.T) {
	pods := listWatchScope{mapping: testMapping(), rep: repTyped}
	deployments := pods
	deployments.mapping = &meta.RESTMapping{Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}}
	md := pods
	md.rep = repMetadata
	inNS := pods
	inNS.namespace = "team-a"
	long := inNS
	long.namespace = strings.Repeat("n", 63)
	want := map[string]listWatchScope{
		"ctrl-pods": pods, "ctrl-deployments.apps": deployments, "ctrl-pods-metadata": md, "ctrl-pods-team-a": inNS,
	}
	for group, s := range want {
		if got := leaseGroup("ctrl", s); got != group {
			t.Errorf("group %q, want %q", got, group)
		}
	}
	g := leaseGroup("ctrl", long)
	if len(g) > maxLabelValue || !strings.HasPrefix(g, "ctrl-pods-nnn") || g == leaseGroup("ctrl", func() listWatchScope { s := long; s.namespace += "x"; return s }()) {
		t.Errorf("long group %q (%d characters)", g, len(g))
	}
}
