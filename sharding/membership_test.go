package sharding

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const (
	memberTestLease   = 15 * time.Second
	memberTestRenew   = 5 * time.Second
	memberTestHandoff = 10 * time.Second
)

// memberTestReplica is one replica of the group and the shard it currently owns.
type memberTestReplica struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	sel    apisharding.Selector
}

func (r *memberTestReplica) owns(t *testing.T, obj runtime.Object) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sel == nil {
		return false
	}
	ok, err := r.sel.Matches(obj)
	require.NoError(t, err)
	return ok
}

// memberTestGroup runs replicas on one fake clientset and tracks, per sample object, how long it
// has gone without an owner or with several.
type memberTestGroup struct {
	t        *testing.T
	client   *k8sfake.Clientset
	replicas map[string]*memberTestReplica
	samples  []runtime.Object
	unowned  []time.Duration // current run of seconds without an owner, per sample
	shared   []time.Duration // current run of seconds with several owners, per sample
	maxGap   time.Duration
	maxShare time.Duration
}

func newMemberTestGroup(t *testing.T) *memberTestGroup {
	g := &memberTestGroup{t: t, client: k8sfake.NewClientset(), replicas: map[string]*memberTestReplica{}}
	for i := range 120 {
		g.samples = append(g.samples, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), UID: types.UID(fmt.Sprintf("uid-%d", i))}})
	}
	g.unowned = make([]time.Duration, len(g.samples))
	g.shared = make([]time.Duration, len(g.samples))
	return g
}

func (g *memberTestGroup) start(id string) {
	r := &memberTestReplica{}
	m, err := NewMembership(MembershipOptions{
		Client: g.client, Namespace: "kube-system", Group: "ctrl", Identity: id,
		LeaseDuration: memberTestLease, RenewInterval: memberTestRenew, Handover: memberTestHandoff,
		OnChange: func(s Shard) {
			reqs, err := s.requirements()
			require.NoError(g.t, err)
			r.mu.Lock()
			defer r.mu.Unlock()
			r.sel = apisharding.NewSelector(reqs...)
		},
	})
	require.NoError(g.t, err)
	r.cancel, r.done = runInBackground(m.Run)
	g.replicas[id] = r
}

// runInBackground calls run on a goroutine of its own with a context that cancel ends; done
// is closed once run has returned.
func runInBackground(run func(context.Context)) (cancel context.CancelFunc, done chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	return cancel, done
}

// stop ends a replica gracefully: it counts as an owner until Run returns.
func (g *memberTestGroup) stop(id string) {
	g.replicas[id].cancel()
}

// crash ends a replica whose Lease stays behind; it owns nothing from now on.
func (g *memberTestGroup) crash(id string) {
	keepLeaseOnExit(g.client, id)
	r := g.replicas[id]
	r.cancel()
	<-r.done
	delete(g.replicas, id)
}

// keepLeaseOnExit makes deleting replica id's Lease fail, as when its process is gone.
func keepLeaseOnExit(client *k8sfake.Clientset, id string) {
	client.PrependReactor("delete", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.DeleteAction).GetName() == "ctrl-"+id {
			return true, nil, errors.New("the process is gone")
		}
		return false, nil, nil
	})
}

// run advances the fake time second by second, recording the longest gap and overlap.
func (g *memberTestGroup) run(d time.Duration) {
	for elapsed := time.Duration(0); elapsed < d; elapsed += time.Second {
		time.Sleep(time.Second)
		synctest.Wait()
		for id, r := range g.replicas {
			select {
			case <-r.done:
				delete(g.replicas, id)
			default:
			}
		}
		for i, obj := range g.samples {
			owners := 0
			for _, r := range g.replicas {
				if r.owns(g.t, obj) {
					owners++
				}
			}
			g.unowned[i] = runLength(g.unowned[i], owners == 0)
			g.shared[i] = runLength(g.shared[i], owners > 1)
			g.maxGap = max(g.maxGap, g.unowned[i])
			g.maxShare = max(g.maxShare, g.shared[i])
		}
	}
}

func runLength(d time.Duration, on bool) time.Duration {
	if on {
		return d + time.Second
	}
	return 0
}

// settled asserts that every sample has exactly one owner now, and resets the maxima.
func (g *memberTestGroup) settled(what string) {
	g.t.Helper()
	for i := range g.samples {
		assert.Zero(g.t, g.unowned[i], "%s: sample %d unowned", what, i)
		assert.Zero(g.t, g.shared[i], "%s: sample %d owned twice", what, i)
	}
	g.maxGap, g.maxShare = 0, 0
}

func TestMembershipRebalancesWithBoundedGapAndOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemberTestGroup(t)
		for _, id := range []string{"a", "b", "c"} {
			g.start(id)
		}
		g.run(memberTestRenew + memberTestHandoff + time.Second)
		g.settled("3 replicas")

		g.start("d")
		g.run(2*memberTestRenew + memberTestHandoff)
		assert.Zero(t, g.maxGap, "a join leaves no object unowned")
		assert.LessOrEqual(t, g.maxShare, memberTestRenew+memberTestHandoff, "a join's overlap is bounded")
		assert.NotZero(t, g.maxShare, "the handover overlaps")
		g.settled("4 replicas")

		g.stop("d")
		g.run(2*memberTestRenew + memberTestHandoff)
		assert.Zero(t, g.maxGap, "a graceful leave leaves no object unowned")
		assert.LessOrEqual(t, g.maxShare, memberTestRenew+memberTestHandoff, "a leave's overlap is bounded")
		g.settled("back to 3 replicas")

		g.crash("b")
		g.run(memberTestLease + 2*memberTestRenew + memberTestHandoff)
		assert.NotZero(t, g.maxGap, "a crashed replica's objects wait for its Lease to expire")
		assert.LessOrEqual(t, g.maxGap, memberTestLease+memberTestRenew, "a crash's gap is bounded by lease duration + renew interval")
		g.settled("2 replicas after a crash")

		for id := range g.replicas {
			g.stop(id)
		}
		g.run(memberTestHandoff + time.Second)
		assert.Empty(t, g.replicas, "every Run returned")
	})
}

func TestMembershipOptionsAreChecked(t *testing.T) {
	client := k8sfake.NewClientset()
	ok := MembershipOptions{Client: client, Namespace: "ns", Group: "g", Identity: "a", OnChange: func(Shard) {}}
	m, err := NewMembership(ok)
	require.NoError(t, err)
	assert.Equal(t, 15*time.Second, m.opts.LeaseDuration)
	assert.Equal(t, 5*time.Second, m.opts.RenewInterval)
	assert.Equal(t, 10*time.Second, m.opts.Handover)
	for name, mutate := range map[string]func(*MembershipOptions){
		"no client":          func(o *MembershipOptions) { o.Client = nil },
		"no identity":        func(o *MembershipOptions) { o.Identity = "" },
		"bad field":          func(o *MembershipOptions) { o.Field = "metadata.name" },
		"handover too short": func(o *MembershipOptions) { o.Handover = time.Second },
		"renew too slow":     func(o *MembershipOptions) { o.RenewInterval = time.Minute },
	} {
		opts := ok
		mutate(&opts)
		_, err := NewMembership(opts)
		assert.Error(t, err, name)
	}
}
