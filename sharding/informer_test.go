package sharding

import (
	"context"
	"fmt"
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
)

// viewHandler keeps what a MembershipInformer's handler was told, key -> resourceVersion, and
// any notification that contradicts it.
type viewHandler struct {
	mu       sync.Mutex
	view     map[string]string
	problems []string
}

func (h *viewHandler) OnAdd(obj any, _ bool) {
	h.change(obj, func(key, rv string, known bool) string {
		if known {
			return "add of known " + key
		}
		h.view[key] = rv
		return ""
	})
}

func (h *viewHandler) OnUpdate(oldObj, newObj any) {
	prevRV := oldObj.(*v1.Pod).ResourceVersion
	h.change(newObj, func(key, rv string, known bool) string {
		if !known || h.view[key] != prevRV {
			return fmt.Sprintf("update of %s from %s, handler saw %q", key, prevRV, h.view[key])
		}
		h.view[key] = rv
		return ""
	})
}

func (h *viewHandler) OnDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	h.change(obj, func(key, _ string, known bool) string {
		if !known {
			return "delete of unknown " + key
		}
		delete(h.view, key)
		return ""
	})
}

func (h *viewHandler) change(obj any, apply func(key, rv string, known bool) string) {
	p := obj.(*v1.Pod)
	key := p.Namespace + "/" + p.Name
	h.mu.Lock()
	defer h.mu.Unlock()
	_, known := h.view[key]
	if problem := apply(key, p.ResourceVersion, known); problem != "" {
		h.problems = append(h.problems, problem)
	}
}

// memberInformerGroup runs MembershipInformers on one fake server and one fake clientset's
// Leases and measures, per server object, the longest run of seconds in which no replica's
// live cache held it, or several did.
type memberInformerGroup struct {
	t        *testing.T
	server   *fake.Server
	leases   *k8sfake.Clientset
	replicas map[string]*memberInformerReplica
	unowned  map[string]time.Duration
	shared   map[string]time.Duration
	maxGap   time.Duration
	maxShare time.Duration
	writes   int
}

type memberInformerReplica struct {
	informer *MembershipInformer
	server   *listCounter
	handler  *viewHandler
	cancel   context.CancelFunc
	done     chan struct{}
}

func newMemberInformerGroup(t *testing.T) *memberInformerGroup {
	g := &memberInformerGroup{t: t, server: shardTestServer(t, 200, fake.ShardSelectorsApplied, false),
		leases: k8sfake.NewClientset(), replicas: map[string]*memberInformerReplica{},
		unowned: map[string]time.Duration{}, shared: map[string]time.Duration{}}
	return g
}

func (g *memberInformerGroup) start(id string) {
	server := &listCounter{Server: g.server}
	mi, err := NewMembershipInformer(server, &v1.Pod{}, 0, cache.Indexers{}, MembershipOptions{
		Client: g.leases, Namespace: "kube-system", Group: "ctrl", Identity: id,
		LeaseDuration: memberTestLease, RenewInterval: memberTestRenew, Handover: memberTestHandoff,
	})
	require.NoError(g.t, err)
	r := &memberInformerReplica{informer: mi, server: server, handler: &viewHandler{view: map[string]string{}}}
	require.NoError(g.t, mi.AddEventHandler(r.handler))
	r.cancel, r.done = runInBackground(mi.Run)
	g.replicas[id] = r
}

// listCounter passes a replica's requests to the shared fake.Server and counts its full lists:
// LISTs and watch-list requests.
type listCounter struct {
	*fake.Server
	lists atomic.Int32
}

func (c *listCounter) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	c.lists.Add(1)
	return c.Server.ListWithContext(ctx, options)
}

func (c *listCounter) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	if ptr.Deref(options.SendInitialEvents, false) {
		c.lists.Add(1)
	}
	return c.Server.WatchWithContext(ctx, options)
}

// listsSince returns, per replica, the full lists it made since the previous call.
func (g *memberInformerGroup) listsSince() map[string]int {
	lists := map[string]int{}
	for id, r := range g.replicas {
		lists[id] = int(r.server.lists.Swap(0))
	}
	return lists
}

// crash ends a replica whose Lease stays behind.
func (g *memberInformerGroup) crash(id string) {
	keepLeaseOnExit(g.leases, id)
	r := g.replicas[id]
	r.cancel()
	<-r.done
	delete(g.replicas, id)
}

// write changes a few pods: one created, one of the first 60 updated, one of the others
// deleted.
func (g *memberInformerGroup) write() {
	g.writes++
	_, err := g.server.Create(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "new", Name: fmt.Sprintf("w%03d", g.writes)}})
	require.NoError(g.t, err)
	updated := g.writes % 60
	obj, err := g.server.Get(fmt.Sprintf("ns%d", updated%5), fmt.Sprintf("p%03d", updated))
	require.NoError(g.t, err)
	p := obj.(*v1.Pod)
	p.Labels = map[string]string{"touched": "yes"}
	_, err = g.server.Update(p)
	require.NoError(g.t, err)
	_, err = g.server.Delete(fmt.Sprintf("ns%d", (g.writes+60)%5), fmt.Sprintf("p%03d", g.writes+60))
	require.NoError(g.t, err)
}

// run advances the bubble's time second by second under the write load.
func (g *memberInformerGroup) run(d time.Duration) {
	for elapsed := time.Duration(0); elapsed < d; elapsed += time.Second {
		g.write()
		time.Sleep(time.Second)
		synctest.Wait()
		for id, r := range g.replicas {
			select {
			case <-r.done:
				delete(g.replicas, id)
			default:
			}
		}
		g.sample()
	}
}

func (g *memberInformerGroup) sample() {
	unowned, shared := map[string]time.Duration{}, map[string]time.Duration{}
	for _, obj := range g.server.Objects() {
		p := obj.(*v1.Pod)
		key := p.Namespace + "/" + p.Name
		owners := 0
		for _, r := range g.replicas {
			if _, ok, _ := r.informer.GetStore().GetByKey(key); ok {
				owners++
			}
		}
		unowned[key] = runLength(g.unowned[key], owners == 0)
		shared[key] = runLength(g.shared[key], owners > 1)
		g.maxGap = max(g.maxGap, unowned[key])
		g.maxShare = max(g.maxShare, shared[key])
	}
	g.unowned, g.shared = unowned, shared
}

// settled asserts an exact partition of the server's objects, handlers that agree with their
// caches, each replica on exactly its even range, and resets the maxima.
func (g *memberInformerGroup) settled(what string) {
	g.t.Helper()
	for key := range g.unowned {
		assert.Zero(g.t, g.unowned[key], "%s: %s unowned", what, key)
		assert.Zero(g.t, g.shared[key], "%s: %s owned twice", what, key)
	}
	for id, r := range g.replicas {
		require.True(g.t, r.informer.HasSynced(), "%s: %s synced", what, id)
		cached := map[string]string{}
		for _, obj := range r.informer.GetStore().List() {
			p := obj.(*v1.Pod)
			cached[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		r.handler.mu.Lock()
		assert.Empty(g.t, r.handler.problems, "%s: %s's handler", what, id)
		assert.Equal(g.t, cached, maps.Clone(r.handler.view), "%s: %s's handler agrees with its cache", what, id)
		r.handler.mu.Unlock()
	}
	g.assertShards()
	g.maxGap, g.maxShare = 0, 0
}

// Each step also counts the full lists (LIST or watch-list) each replica makes: a membership
// change costs a replica one for the union when it gains hashes, none when its new range lies
// within the old one, and none for the shrink at the end of the handover, which narrows the
// cache it has. Replicas in identity order: on d's join a's third shrinks to a quarter, b's and
// c's ranges move (overlapping the old ones), d starts; on the leave a, b and c all gain; on
// b's crash a and c gain.
func TestMembershipInformerHandsOverWithBoundedGapAndOverlap(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		g := newMemberInformerGroup(t)
		for _, id := range []string{"a", "b", "c"} {
			g.start(id)
		}
		g.run(memberTestRenew + memberTestHandoff + time.Second)
		g.settled("3 replicas")
		g.listsSince()

		g.start("d")
		g.run(2*memberTestRenew + memberTestHandoff)
		assert.Zero(t, g.maxGap, "a join leaves no object unowned")
		assert.NotZero(t, g.maxShare, "the handover overlaps")
		assert.LessOrEqual(t, g.maxShare, memberTestRenew+memberTestHandoff+time.Second, "a join's overlap is bounded")
		g.settled("4 replicas")
		assert.Equal(t, map[string]int{"a": 0, "b": 1, "c": 1, "d": 1}, g.listsSince(), "full lists per replica for a join")

		g.replicas["d"].cancel()
		g.run(2*memberTestRenew + memberTestHandoff)
		assert.Zero(t, g.maxGap, "a graceful leave leaves no object unowned")
		assert.LessOrEqual(t, g.maxShare, memberTestRenew+memberTestHandoff+time.Second, "a leave's overlap is bounded")
		g.settled("back to 3 replicas")
		assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, g.listsSince(), "full lists per replica for a leave")

		g.crash("b")
		g.run(memberTestLease + 2*memberTestRenew + memberTestHandoff)
		assert.NotZero(t, g.maxGap, "a crashed replica's objects wait for its Lease to expire")
		assert.LessOrEqual(t, g.maxGap, memberTestLease+memberTestRenew+time.Second, "a crash's gap is bounded")
		g.settled("2 replicas after a crash")
		assert.Equal(t, map[string]int{"a": 1, "c": 1}, g.listsSince(), "full lists per replica after a crash")

		for _, r := range g.replicas {
			r.cancel()
		}
		g.run(memberTestHandoff + time.Second)
		assert.Empty(t, g.replicas, "every Run returned")
	})
}

// assertShards asserts that every replica's live generation selects exactly its even range.
func (g *memberInformerGroup) assertShards() {
	g.t.Helper()
	ids := slices.Sorted(maps.Keys(g.replicas))
	for i, id := range ids {
		r, err := EvenRange(i, len(ids))
		require.NoError(g.t, err)
		want, err := Shard{Ranges: []Range{r}}.Selector()
		require.NoError(g.t, err)
		lw := g.replicas[id].informer.ListWatch()
		assert.Equal(g.t, want, lw.Selector(), "%s's shard", id)
		assert.Equal(g.t, ModeServer, lw.Mode(), "%s: events of the ranges narrowed away are not taken for a server ignoring the selector", id)
	}
}

func TestMembershipInformerReadsAndIndexesFollowTheLiveGeneration(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		s := shardTestServer(t, 40, fake.ShardSelectorsApplied, false)
		mi, err := NewMembershipInformer(s, &v1.Pod{}, 0, cache.Indexers{}, MembershipOptions{
			Client: k8sfake.NewClientset(), Namespace: "ns", Group: "g", Identity: "only",
		})
		require.NoError(t, err)
		indexer := mi.GetIndexer()
		assert.Empty(t, indexer.List(), "nothing before the first shard")
		assert.Nil(t, mi.ListWatch())
		cancel, done := runInBackground(mi.Run)
		time.Sleep(time.Second)
		synctest.Wait()
		require.True(t, mi.HasSynced())
		assert.Len(t, indexer.List(), 40, "the only replica owns everything")
		require.NoError(t, indexer.AddIndexers(cache.Indexers{"ns": cache.MetaNamespaceIndexFunc}))
		inNS0, err := indexer.ByIndex("ns", "ns0")
		require.NoError(t, err)
		assert.Len(t, inNS0, 8)
		assert.Equal(t, ModeServer, mi.ListWatch().Mode())

		late := &viewHandler{view: map[string]string{}}
		require.NoError(t, mi.AddEventHandler(late))
		synctest.Wait()
		late.mu.Lock()
		assert.Len(t, late.view, 40, "a late handler gets the live cache as adds")
		late.mu.Unlock()
		cancel()
		<-done
	})
}

func TestMembershipInformerOptionsAreChecked(t *testing.T) {
	opts := MembershipOptions{Client: k8sfake.NewClientset(), Namespace: "ns", Group: "g", Identity: "a"}
	_, err := NewMembershipInformer(nil, &v1.Pod{}, 0, nil, opts)
	assert.Error(t, err, "nil ListerWatcher")
	withOnChange := opts
	withOnChange.OnChange = func(Shard) {}
	_, err = NewMembershipInformer(&ListWatch{}, &v1.Pod{}, 0, nil, withOnChange)
	assert.Error(t, err, "OnChange set")
	noGroup := opts
	noGroup.Group = ""
	_, err = NewMembershipInformer(&ListWatch{}, &v1.Pod{}, 0, nil, noGroup)
	assert.Error(t, err, "membership options checked")
}
