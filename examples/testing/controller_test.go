package testing

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
)

const (
	waitFor = 10 * time.Second
	tick    = 5 * time.Millisecond
)

func pod(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// startInformer runs informer until the test ends and waits for its sync.
func startInformer(t *testing.T, informer cache.SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced))
}

func setPhase(t *testing.T, server *fake.Server, name string, phase corev1.PodPhase) {
	t.Helper()
	obj, err := server.Get("default", name)
	require.NoError(t, err)
	p := obj.(*corev1.Pod)
	p.Status.Phase = phase
	_, err = server.Update(p)
	require.NoError(t, err)
}

func TestPhaseCounterFollowsChanges(t *testing.T) {
	// Registered first so that it runs last, after startInformer's cleanup.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	server := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: []runtime.Object{
		pod("a", corev1.PodPending), pod("b", corev1.PodRunning), pod("c", corev1.PodRunning),
	}})
	informer := cache.NewSharedIndexInformer(server, &corev1.Pod{}, 0, cache.Indexers{})
	counter, reg, err := NewPhaseCounter(informer)
	require.NoError(t, err)
	startInformer(t, informer)

	// The registration's HasSynced means the handler has seen the initial list.
	require.True(t, cache.WaitForCacheSync(nil, reg.HasSynced))
	assert.Equal(t, 2, counter.Count(corev1.PodRunning))

	setPhase(t, server, "a", corev1.PodRunning)
	_, err = server.Delete("default", "b")
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		return counter.Count(corev1.PodRunning) == 2 && counter.Known() == 2
	}, waitFor, tick)
}

// TestPhaseCounterSurvivesRelist makes the informer miss a deletion and an
// update behind a 410 Gone; after the relist the controller must still
// converge, the deletion arriving as a tombstone.
func TestPhaseCounterSurvivesRelist(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	server := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: []runtime.Object{
		pod("a", corev1.PodPending), pod("b", corev1.PodPending),
	}})
	informer := cache.NewSharedIndexInformer(server, &corev1.Pod{}, 0, cache.Indexers{})
	counter, _, err := NewPhaseCounter(informer)
	require.NoError(t, err)
	startInformer(t, informer)

	release := server.HoldEvents() // the informer's watch sees nothing from here
	setPhase(t, server, "a", corev1.PodSucceeded)
	_, err = server.Delete("default", "b")
	require.NoError(t, err)
	server.Compact()      // the informer's resourceVersion is now too old: 410 Gone
	server.CloseWatches() // and its watch drops before delivering the held events
	release()

	assert.Eventually(t, func() bool {
		return counter.Known() == 1 && counter.Count(corev1.PodSucceeded) == 1
	}, waitFor, tick)
	streams := 0
	for _, r := range server.Requests() {
		if r.Verb == fake.VerbWatch && r.Options.SendInitialEvents != nil && *r.Options.SendInitialEvents {
			streams++
		}
	}
	assert.Equal(t, 2, streams, "one initial sync and one relist, both streamed (watch-list)")
}

// blockingHandler records the latest phase it saw per pod, but only once
// its gate opens: a stand-in for a handler stuck on a slow dependency.
type blockingHandler struct {
	gate   chan struct{}
	mu     sync.Mutex
	latest map[string]corev1.PodPhase
}

func (h *blockingHandler) record(obj interface{}) {
	<-h.gate
	p := obj.(*corev1.Pod)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.latest[p.Name] = p.Status.Phase
}

func (h *blockingHandler) phase(name string) corev1.PodPhase {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.latest[name]
}

// TestSlowHandlerDoesNotHoldBackController shows two things: handlers do not
// wait for each other, and a bounded backlog
// (MaxPendingNotificationsPerHandler) keeps a stuck handler's memory flat
// while it still ends on every object's latest state.
func TestSlowHandlerDoesNotHoldBackController(t *testing.T) {
	defer goleak.VerifyNone(t)
	const pods = 20
	var seed []runtime.Object
	for i := range pods {
		seed = append(seed, pod(fmt.Sprintf("p%d", i), corev1.PodPending))
	}
	server := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Objects: seed})
	informer := cache.NewSharedIndexInformerWithOptions(server, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		MaxPendingNotificationsPerHandler: 8,
	})
	counter, _, err := NewPhaseCounter(informer)
	require.NoError(t, err)
	slow := &blockingHandler{gate: make(chan struct{}), latest: map[string]corev1.PodPhase{}}
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    slow.record,
		UpdateFunc: func(_, obj interface{}) { slow.record(obj) },
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()

	for round := range 5 {
		phase := []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded}[round%2]
		for i := range pods {
			setPhase(t, server, fmt.Sprintf("p%d", i), phase)
		}
	}
	// The stuck handler has not returned once, yet the controller is done.
	assert.Eventually(t, func() bool { return counter.Count(corev1.PodRunning) == pods }, waitFor, tick)

	close(slow.gate)
	assert.Eventually(t, func() bool {
		for i := range pods {
			if slow.phase(fmt.Sprintf("p%d", i)) != corev1.PodRunning {
				return false
			}
		}
		return true
	}, waitFor, tick, "the slow handler must end on every pod's latest state")
}
