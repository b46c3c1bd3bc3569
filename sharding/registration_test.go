package sharding

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache"
)

// seriesNames records the handler name of every lag-metrics series asked for.
type seriesNames struct {
	mu    sync.Mutex
	names map[string]bool
}

func (s *seriesNames) NewPendingNotificationsMetric(_ cache.InformerNameAndResource, handler string) cache.GaugeMetric {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[handler] = true
	return nopMetric{}
}

func (s *seriesNames) NewOldestPendingAgeMetric(cache.InformerNameAndResource, string) cache.GaugeMetric {
	return nopMetric{}
}

func (s *seriesNames) NewBacklogCollapsesMetric(cache.InformerNameAndResource, string) cache.CounterMetric {
	return nopMetric{}
}

type nopMetric struct{}

func (nopMetric) Set(float64) {}
func (nopMetric) Inc()        {}
func (nopMetric) Dec()        {}

// TestMembershipInformerGenerationsGetTheOptions: a generation started at a handover is built
// like the first, with the informer options, the transform and the watch error handler; the
// generations' registrations carry the user's handler name; a removed handler hears nothing
// more, not even the switch's differences.
func TestMembershipInformerGenerationsGetTheOptions(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		g := newMemberInformerGroup(t)
		for _, p := range g.server.Objects() {
			pod := p.(*v1.Pod)
			pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "test"}}
			_, err := g.server.Update(pod)
			require.NoError(t, err)
		}
		g.start("a")
		series := &seriesNames{names: map[string]bool{}}
		mi, err := NewMembershipInformerWithOptions(&listCounter{Server: g.server}, &v1.Pod{}, cache.SharedIndexInformerOptions{
			StripManagedFields: true, HandlerMetricsProvider: series, Indexers: cache.Indexers{"ns": cache.MetaNamespaceIndexFunc},
		}, MembershipOptions{Client: g.leases, Namespace: "kube-system", Group: "ctrl", Identity: "b",
			LeaseDuration: memberTestLease, RenewInterval: memberTestRenew, Handover: memberTestHandoff})
		require.NoError(t, err)
		require.NoError(t, mi.SetTransform(func(obj any) (any, error) {
			obj.(*v1.Pod).Annotations = map[string]string{"transformed": "yes"}
			return obj, nil
		}))
		var watchErrors atomic.Int32
		require.NoError(t, mi.SetWatchErrorHandlerWithContext(func(context.Context, *clientcache.Reflector, error) { watchErrors.Add(1) }))
		b := &memberInformerReplica{informer: mi, server: &listCounter{}, handler: &viewHandler{view: map[string]string{}}}
		require.NoError(t, mi.AddEventHandler(b.handler))
		removed := &viewHandler{view: map[string]string{}}
		reg, err := mi.AddEventHandlerWithOptions(removed, cache.HandlerOptions{})
		require.NoError(t, err)
		assert.False(t, reg.HasSynced(), "nothing received before Run")
		b.cancel, b.done = runInBackground(mi.Run)
		g.replicas["b"] = b
		g.run(memberTestRenew + memberTestHandoff + time.Second)
		g.settled("a and b")
		assert.True(t, reg.HasSynced())
		<-reg.HasSyncedChecker().Done()
		<-mi.HasSyncedChecker().Done()
		first := mi.ListWatch()

		require.NoError(t, mi.RemoveEventHandler(reg))
		require.NoError(t, mi.RemoveEventHandler(reg), "removing twice")
		removed.mu.Lock()
		atRemoval := maps.Clone(removed.view)
		removed.mu.Unlock()
		g.server.FailNextWatches(1, nil)
		g.server.FailNextLists(1, nil)
		g.replicas["a"].cancel()
		g.run(2*memberTestRenew + memberTestHandoff)
		g.settled("b alone")
		require.NotSame(t, first, mi.ListWatch(), "b gained a's range with a new generation")

		objs := mi.GetStore().List()
		assert.Len(t, objs, len(g.server.Objects()))
		for _, obj := range objs {
			p := obj.(*v1.Pod)
			assert.Empty(t, p.ManagedFields, "%s: managed fields stripped", p.Name)
			assert.Equal(t, "yes", p.Annotations["transformed"], "%s: transformed", p.Name)
		}
		inNS0, err := mi.GetIndexer().ByIndex("ns", "ns0")
		require.NoError(t, err)
		assert.NotEmpty(t, inNS0, "the options' indexers")
		assert.Positive(t, watchErrors.Load(), "the new generation's failed request reached the handler")
		removed.mu.Lock()
		assert.Equal(t, atRemoval, removed.view, "a removed handler hears nothing more")
		removed.mu.Unlock()
		series.mu.Lock()
		// The sweeper is the generations' own handler once a shard narrowed.
		assert.Equal(t, []string{"github.com/openinformer/cache/sharding.shardSweeper", "github.com/openinformer/cache/sharding.viewHandler"},
			slices.Sorted(maps.Keys(series.names)), "series carry the user's handler name, not the adapter's")
		series.mu.Unlock()

		assert.False(t, mi.IsStopped())
		require.Error(t, mi.SetTransform(nil), "too late")
		b.cancel()
		g.run(memberTestHandoff + time.Second)
		assert.True(t, mi.IsStopped())
	})
}

func TestMembershipInformerRefusesSnapshotsAndSelectors(t *testing.T) {
	opts := MembershipOptions{Client: nil, Namespace: "ns", Group: "g", Identity: "a"}
	err := opts.Validate()
	assert.EqualError(t, err, "membership: Client, Namespace, Group, Identity and OnChange are required; missing Client")
	sel, err := Shard{Count: 2}.Selector()
	require.NoError(t, err)
	for name, o := range map[string]cache.SharedIndexInformerOptions{
		"snapshot": {Snapshot: &cache.SnapshotOptions{Path: "x"}},
		"shard":    {ShardSelector: sel},
	} {
		_, err := NewMembershipInformerWithOptions(&ListWatch{}, &v1.Pod{}, o, opts)
		assert.Error(t, err, name)
	}
}

// selfNamed is a handler that names itself.
type selfNamed struct {
	cache.ResourceEventHandlerFuncs
}

func (selfNamed) EventHandlerName() string { return "replicaset" }

// TestHandlerNameAsAnInformerGivesIt: the generations' registrations carry the name an informer
// gives the user's handler when registered on it directly; a nil handler is refused.
func TestHandlerNameAsAnInformerGivesIt(t *testing.T) {
	onAdd := func(any) {}
	for name, h := range map[string]cache.ResourceEventHandler{
		"own type":              &viewHandler{},
		"own name":              selfNamed{},
		"functions":             cache.ResourceEventHandlerFuncs{AddFunc: onAdd},
		"functions by pointer":  &cache.ResourceEventHandlerFuncs{AddFunc: onAdd},
		"client-go's functions": clientcache.ResourceEventHandlerFuncs{AddFunc: onAdd},
		"cache's filtering":     cache.FilteringResourceEventHandler{FilterFunc: func(any) bool { return true }, Handler: &viewHandler{}},
		"cache's detailed":      &cache.ResourceEventHandlerDetailedFuncs{},
	} {
		series := &seriesNames{names: map[string]bool{}}
		inf := cache.NewSharedIndexInformerWithOptions(&ListWatch{}, &v1.Pod{}, cache.SharedIndexInformerOptions{HandlerMetricsProvider: series})
		_, err := inf.AddEventHandler(h)
		require.NoError(t, err, name)
		assert.Equal(t, []string{handlerName(h)}, slices.Collect(maps.Keys(series.names)), name)
	}
	mi, err := NewMembershipInformer(&ListWatch{}, &v1.Pod{}, 0, nil, MembershipOptions{Client: k8sfake.NewClientset(), Namespace: "ns", Group: "g", Identity: "a"})
	require.NoError(t, err)
	for _, h := range []cache.ResourceEventHandler{nil, (*cache.ResourceEventHandlerFuncs)(nil)} {
		_, err := mi.AddEventHandlerWithOptions(h, cache.HandlerOptions{})
		assert.Error(t, err, "%T", h)
	}
}
