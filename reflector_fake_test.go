package cache

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	clientcache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openinformer/cache/fake"
)

// reflectorNotifyingStore is a test store that signals every change.
type reflectorNotifyingStore struct {
	*reflectorTestStore
	changed chan struct{}
}

func (s *reflectorNotifyingStore) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *reflectorNotifyingStore) Add(obj interface{}) error {
	defer s.notify()
	return s.reflectorTestStore.Add(obj)
}

func (s *reflectorNotifyingStore) Update(obj interface{}) error {
	defer s.notify()
	return s.reflectorTestStore.Update(obj)
}

func (s *reflectorNotifyingStore) Delete(obj interface{}) error {
	defer s.notify()
	return s.reflectorTestStore.Delete(obj)
}

func (s *reflectorNotifyingStore) Replace(list []interface{}, rv string) error {
	defer s.notify()
	return s.reflectorTestStore.Replace(list, rv)
}

// waitFor blocks until cond holds, re-checking after every store change.
func (s *reflectorNotifyingStore) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-s.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; store: %v", what, s.contents())
		}
	}
}

func (s *reflectorNotifyingStore) replaces() int {
	n := 0
	for _, op := range s.operations() {
		if len(op) > 7 && op[:7] == "replace" {
			n++
		}
	}
	return n
}

// reflectorFaultScenario drives one reflector against a fake API server.
type reflectorFaultScenario struct {
	name  string
	noWL  bool
	setup func(s *fake.Server)
	drive func(t *testing.T, s *fake.Server, store *reflectorNotifyingStore)
}

func runReflectorFaultScenario(t *testing.T, sc reflectorFaultScenario, ours bool) ([]string, []string) {
	srv := fake.MustNew(fake.Options{Object: &v1.Pod{}, WatchListUnsupported: sc.noWL,
		Clock: clocktesting.NewFakeClock(time.Unix(0, 0))})
	for i := 0; i < 3; i++ {
		_, err := srv.Create(newTestPod("ns", "p"+string(rune('0'+i)), ""))
		require.NoError(t, err)
	}
	sc.setup(srv)
	clk := newReflectorTestClock()
	store := &reflectorNotifyingStore{reflectorTestStore: newReflectorTestStore(), changed: make(chan struct{}, 1)}
	var law func(context.Context) error
	if ours {
		law = NewReflectorWithOptions(srv, &v1.Pod{}, store, ReflectorOptions{Clock: clk}).ListAndWatchWithContext
	} else {
		law = clientcache.NewReflectorWithOptions(srv, &v1.Pod{}, store, clientcache.ReflectorOptions{Clock: clk}).ListAndWatchWithContext
	}
	ctx, cancel := context.WithCancel(context.Background())
	stepped := clk.autoStep(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = law(ctx)
		}
	}()
	sc.drive(t, srv, store)
	cancel()
	<-done
	stepped()
	var calls []string
	for _, r := range srv.Requests() {
		calls = append(calls, reflectorCall{Watch: r.Verb == fake.VerbWatch, Options: r.Options}.String())
	}
	return calls, store.contents()
}

func TestReflectorFaultsAgainstFakeServer(t *testing.T) {
	for _, sc := range []reflectorFaultScenario{
		{
			name:  "watch-list through 429s, then 410 mid-watch",
			setup: func(s *fake.Server) { s.FailNextWatches(2, fake.TooManyRequests(1)) },
			drive: func(t *testing.T, s *fake.Server, store *reflectorNotifyingStore) {
				store.waitFor(t, "initial sync", func() bool { return len(store.contents()) == 3 })
				_, err := s.Create(newTestPod("ns", "p3", ""))
				require.NoError(t, err)
				store.waitFor(t, "p3", func() bool { return len(store.contents()) == 4 })
				s.SendWatchError(fake.Expired("compacted"))
				store.waitFor(t, "resync after 410", func() bool { return store.replaces() == 2 })
			},
		},
		{
			name:  "list path through refused connections and a restart",
			noWL:  true,
			setup: func(s *fake.Server) { s.FailNextLists(1, fake.Expired("old")) },
			drive: func(t *testing.T, s *fake.Server, store *reflectorNotifyingStore) {
				store.waitFor(t, "initial sync", func() bool { return store.replaces() == 1 })
				_, err := s.Create(newTestPod("ns", "p8", ""))
				require.NoError(t, err)
				store.waitFor(t, "the watch to run", func() bool { return len(store.contents()) == 4 })
				s.FailNextWatches(2, fake.ConnectionRefused())
				s.Restart(100)
				store.waitFor(t, "relist after the restart", func() bool { return store.replaces() == 2 })
				_, err = s.Create(newTestPod("ns", "p9", ""))
				require.NoError(t, err)
				store.waitFor(t, "p9 through the watch", func() bool { return len(store.contents()) == 5 })
			},
		},
	} {
		t.Run(sc.name, func(t *testing.T) {
			theirCalls, theirContents := runReflectorFaultScenario(t, sc, false)
			ourCalls, ourContents := runReflectorFaultScenario(t, sc, true)
			assert.Equal(t, theirCalls, ourCalls)
			assert.Equal(t, theirContents, ourContents)
		})
	}
}
