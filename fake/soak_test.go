package fake

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clientcache "k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	oicache "github.com/openinformer/cache"
)

// soakTestEnvInt reads a positive integer knob from the environment.
func soakTestEnvInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err, "%s", name)
	return n
}

// TestSoakInformersWithRandomFaults drives many random writes and faults through
// openinformer's informer and client-go's, each in watch-list and in LIST mode, and checks that
// every cache converges on the server's contents and that every handler saw, per key, an
// in-order history ending in the latest state. Each run is a testing/synctest bubble, so the
// reflector's backoff after a fault (0.8s, doubling up to 30-60s while faults keep coming
// within two minutes) passes on the bubble's clock and costs no real time; scale the run with
// FAKE_SOAK_EVENTS and FAKE_SOAK_FAULTS and pick other fault sequences with FAKE_SOAK_SEED.
func TestSoakInformersWithRandomFaults(t *testing.T) {
	defer goleak.VerifyNone(t)
	events, faults := int64(2000), int64(3)
	if testing.Short() {
		events, faults = 300, 1
	}
	events = soakTestEnvInt(t, "FAKE_SOAK_EVENTS", events)
	faults = soakTestEnvInt(t, "FAKE_SOAK_FAULTS", faults)
	// Fixed default seeds keep `make test` deterministic in what it injects:
	// between them they drop, cut short, hold and time out watches, compact
	// history and restart the server. FAKE_SOAK_SEED explores others.
	seeds := []int64{2, 3}
	if os.Getenv("FAKE_SOAK_SEED") != "" {
		seeds = []int64{soakTestEnvInt(t, "FAKE_SOAK_SEED", 0)}
	}
	informers := map[string]fakeTestInformerConstructor{
		"openinformer": oicache.NewSharedIndexInformer,
		"client-go":    clientcache.NewSharedIndexInformer,
	}
	t.Run("modes", func(t *testing.T) {
		for _, seed := range seeds {
			for name, newInformer := range informers {
				for _, unsupported := range []bool{false, true} {
					t.Run(fmt.Sprintf("seed=%d/%s/watchListUnsupported=%v", seed, name, unsupported), func(t *testing.T) {
						t.Parallel()
						t.Logf("FAKE_SOAK_SEED=%d FAKE_SOAK_EVENTS=%d FAKE_SOAK_FAULTS=%d", seed, events, faults)
						synctest.Test(t, func(t *testing.T) {
							runSoakTest(t, newInformer, unsupported, int(events), int(faults), rand.New(rand.NewPCG(uint64(seed), 1)))
						})
					})
				}
			}
		}
	})
}

func runSoakTest(t *testing.T, newInformer fakeTestInformerConstructor, watchListUnsupported bool, events, faults int, rng *rand.Rand) {
	s, clk := newFakeTestServer(t, Options{WatchListUnsupported: watchListUnsupported, HistorySize: 300})
	rec := newInformerTestRecorder()
	inf, stop := runFakeTestInformerWith(t, newInformer, s, rec.handler())
	defer stop()

	faultAt := map[int]bool{}
	for len(faultAt) < min(faults, events) {
		faultAt[rng.IntN(events)] = true
	}
	converged := func() bool { return storeMatchesServer(inf.GetStore(), s) }
	// Each fault is followed by a few more writes (which the client must pick up however it
	// recovers), then the test waits for the cache to catch up, so the next fault hits a
	// running informer rather than one still backing off.
	release, recoverAt := func() {}, -1
	for i := range events {
		soakTestWrite(t, s, rng)
		if faultAt[i] {
			release()
			release, recoverAt = soakTestFault(t, s, clk, rng), i+rng.IntN(50)
		}
		if i == recoverAt {
			release()
			release = func() {}
			soakTestAwait(t, s, converged)
		}
		if rng.IntN(200) == 0 {
			clk.Step(time.Duration(rng.IntN(90)) * time.Second) // bookmarks and watch timeouts
		}
	}
	release()
	soakTestAwait(t, s, converged)
	rec.checkFinal(t, s)
	t.Logf("requests: %v; final RV %s", verbs(s.Requests()), s.ResourceVersion())
}

// soakTestWrite makes one random change on a small key space, so keys are created, updated and
// deleted many times over.
func soakTestWrite(t *testing.T, s *Server, rng *rand.Rand) {
	ns, name := fmt.Sprintf("ns%d", rng.IntN(3)), fmt.Sprintf("p%d", rng.IntN(40))
	_, err := s.Get(ns, name)
	if apierrors.IsNotFound(err) {
		mustCreate(t, s, fakeTestPod(ns, name, "v", strconv.Itoa(rng.IntN(5))))
		return
	}
	switch n := rng.IntN(10); {
	case n < 5:
		_, err = s.Update(fakeTestPod(ns, name, "v", strconv.Itoa(rng.IntN(5))))
	case n < 7:
		_, err = s.Patch(ns, name, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{"p":"%d"}}}`, rng.IntN(5)))
	default:
		_, err = s.Delete(ns, name)
	}
	require.NoError(t, err)
}

// soakTestFault injects one random fault; the returned function ends it (a no-op for most).
func soakTestFault(t *testing.T, s *Server, clk *testingclock.FakeClock, rng *rand.Rand) (release func()) {
	kind := rng.IntN(9)
	t.Logf("fault %d at RV %s", kind, s.ResourceVersion())
	switch kind {
	case 0:
		s.CloseWatches()
	case 1:
		s.CloseWatchesAfter(1 + rng.IntN(20))
	case 2:
		s.SendWatchError(Expired("too old resource version"))
	case 3:
		s.Compact()
		s.CloseWatches()
	case 4:
		s.Restart(uint64(1 + rng.IntN(1000)))
	case 5:
		s.FailNextWatches(1+rng.IntN(2), TooManyRequests(0))
		s.FailNextLists(1, InternalError("etcd leader changed"))
		s.CloseWatches()
	case 6:
		s.FailNextWatches(1, ConnectionRefused())
		s.SendWatchError(InternalError("boom"))
	case 7:
		return s.HoldEvents()
	default:
		clk.Step(10 * time.Minute) // every watch times out
	}
	return func() {}
}

// soakTestAwait lets the bubble's clock run until the cache converges and, if it does not within
// the longest backoff and then some, shows how the client got there.
func soakTestAwait(t *testing.T, s *Server, converged func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		synctest.Wait()
		if converged() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, r := range s.Requests() {
		t.Logf("%s rv=%q sendInitialEvents=%v", r.Verb, r.Options.ResourceVersion, r.Options.SendInitialEvents != nil)
	}
	t.Fatalf("no convergence at server RV %s", s.ResourceVersion())
}
