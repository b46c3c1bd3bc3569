package integration

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/openinformer/cache/integration/apiserver"
)

// chaosSettings reads the soak's size: CHAOS_SEEDS seeds (default 3),
// starting at CHAOS_FIRST_SEED (default 1), CHAOS_SECONDS of faults each
// (default 10).
func chaosSettings() (seeds []uint64, window time.Duration) {
	n, first, secs := envInt("CHAOS_SEEDS", 3), envInt("CHAOS_FIRST_SEED", 1), envInt("CHAOS_SECONDS", 10)
	for i := range n {
		seeds = append(seeds, uint64(first+i))
	}
	return seeds, time.Duration(secs) * time.Second
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestChaosSoak runs client-go's informer and ours side by side through a
// TCP proxy that drops, stalls, truncates and refuses connections on a
// seeded schedule, while a writer changes widgets, etcd is compacted and
// the API server restarts once per seed. After each seed, once the faults
// stop: every cache and every handler's last state equal the server's
// (deletes included, as deletes or tombstones), histories are in order, no
// goroutine of ours or of the proxy is left, and convergence times and
// relists are logged for both.
func TestChaosSoak(t *testing.T) {
	expectOurGoroutinesGone(t)
	seeds, window := chaosSettings()
	srv := apiserver.Start(t, apiserver.Options{WatchCache: true})
	client := srv.Dynamic()
	workload{namespaces: testNamespaces, prefix: "chaos-base", objects: scaled(60), writers: 3, updates: 1}.run(t, client)
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { chaosSeed(t, srv, client, seed, window) })
	}
}

func chaosSeed(t *testing.T, srv *apiserver.Server, client dynamic.Interface, seed uint64, window time.Duration) {
	began := time.Now()
	goroutinesBefore := runtime.NumGoroutine()
	proxy, err := newChaosProxy(hostOf(t, srv.Config()), seed)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.close()
	var runs []*informerRun
	for _, impl := range implementations {
		config := srv.Config()
		config.Host = "https://" + proxy.addr
		runs = append(runs, startInformerWith(t, srv, impl, informerSetup{config: config}))
	}
	stopWriter := startChaosWriter(client, seed)
	faults := runChaosSchedule(t, srv, proxy, seed, window)
	writes := stopWriter()
	want := serverState(t, client)
	times := convergenceTimes(t, want, runs, 3*time.Minute)
	waitConvergedTo(t, want, runs)
	if faults["restart"] != 1 {
		t.Errorf("the API server restarted %d times, want 1", faults["restart"])
	}
	for i, run := range runs {
		counts, gone := run.probe.snapshot()
		if counts[kindWatch]+counts[kindWatchList] < 3 {
			t.Errorf("%s: faults never reached it (requests %v)", run.impl.name, counts)
		}
		// A relist costs the server only if it reaches it: attempts refused
		// or reset before an answer are retries timed by backoff jitter,
		// counted apart.
		unansweredRelists := counts[kindList+unanswered] + counts[kindWatchList+unanswered]
		relists := counts[kindList] + counts[kindWatchList] - unansweredRelists - 1
		t.Logf("%s: converged %v after the faults; relists %d (LIST and watch-list answered by the server after the first) and %d attempts unanswered (requests %v, 410s %d)", run.impl.name, times[i].Round(time.Millisecond), relists, unansweredRelists, counts, gone)
		if os.Getenv("CHAOS_TRACE") != "" {
			t.Logf("%s's requests:\n%s", run.impl.name, strings.Join(run.probe.traced(), "\n"))
		}
	}
	for _, run := range runs {
		run.stop()
	}
	proxy.close()
	checkNoGoroutineGrowth(t, goroutinesBefore)
	t.Logf("seed %d: faults %v, %d writes, %d widgets live, wall %v", seed, faults, writes, len(want), time.Since(began).Round(time.Second))
}

func hostOf(t *testing.T, config *rest.Config) string {
	u, err := url.Parse(config.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// runChaosSchedule injects faults for window on a schedule drawn from
// seed, with an API server restart at a random point and an etcd
// compaction every few seconds, and returns how often each fault ran.
func runChaosSchedule(t *testing.T, srv *apiserver.Server, proxy *chaosProxy, seed uint64, window time.Duration) map[string]int {
	rng := rand.New(rand.NewPCG(seed, 0))
	faults := map[string]int{}
	maxPause := min(30*time.Second, max(time.Second, window/4))
	pause := func() time.Duration {
		return time.Duration(rng.Int64N(int64(maxPause-500*time.Millisecond))) + 500*time.Millisecond
	}
	start := time.Now()
	trace := os.Getenv("CHAOS_TRACE") != ""
	before := map[string]int{}
	restartAt := time.Duration((0.3 + 0.4*rng.Float64()) * float64(window))
	nextCompaction, restarted := 2*time.Second, false
	for elapsed := time.Duration(0); elapsed < window; elapsed = time.Since(start) {
		switch {
		case !restarted && elapsed >= restartAt:
			srv.StopAPIServer()
			time.Sleep(pause())
			srv.StartAPIServer()
			restarted = true
			faults["restart"]++
		case elapsed >= nextCompaction:
			srv.Compact(context.Background())
			nextCompaction = elapsed + 2*time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))
			faults["compaction"]++
		default:
			injectFault(t, proxy, rng, pause, faults)
		}
		if trace {
			for fault, n := range faults {
				if n != before[fault] {
					t.Logf("fault %s from %s to %s", fault, start.Add(elapsed).Format("15:04:05.000"), time.Now().Format("15:04:05.000"))
				}
			}
			maps.Copy(before, faults)
		}
		time.Sleep(200*time.Millisecond + time.Duration(rng.Int64N(int64(time.Second))))
	}
	return faults
}

func injectFault(t *testing.T, proxy *chaosProxy, rng *rand.Rand, pause func() time.Duration, faults map[string]int) {
	switch rng.IntN(5) {
	case 0:
		proxy.drop()
		faults["drop"]++
	case 1:
		proxy.truncate()
		faults["truncate"]++
	case 2:
		proxy.stall(pause())
		faults["stall"]++
	case 3:
		if err := proxy.refuse(pause(), rng.Uint64()); err != nil {
			t.Fatal(err)
		}
		faults["refuse"]++
	default:
		faults["calm"]++
	}
}

// startChaosWriter creates, patches and deletes widgets straight on the
// server (not through the proxy) until stopped; failures, such as during
// the API server's restart, are skipped. stop returns the writes that
// succeeded.
func startChaosWriter(client dynamic.Interface, seed uint64) (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		rng := rand.New(rand.NewPCG(seed, 1))
		var live []string
		writes := 0
		for n := 0; ctx.Err() == nil; n++ {
			if chaosWrite(ctx, client, rng, &live, fmt.Sprintf("chaos-%d-%d", seed, n)) {
				writes++
			}
			time.Sleep(25 * time.Millisecond)
		}
		done <- writes
	}()
	return func() int { cancel(); return <-done }
}

// chaosWrite makes one change: a create (when few widgets of its own are
// live), or a patch or delete of one of them. live holds "namespace/name".
func chaosWrite(ctx context.Context, client dynamic.Interface, rng *rand.Rand, live *[]string, name string) bool {
	widgets := client.Resource(apiserver.WidgetGVR)
	if len(*live) < 20 || rng.IntN(10) < 4 {
		ns := testNamespaces[rng.IntN(len(testNamespaces))]
		if _, err := widgets.Namespace(ns).Create(ctx, apiserver.NewWidget(ns, name, 0), metav1.CreateOptions{}); err != nil {
			return false
		}
		*live = append(*live, ns+"/"+name)
		return true
	}
	i := rng.IntN(len(*live))
	ns, victim, _ := strings.Cut((*live)[i], "/")
	if rng.IntN(10) < 7 {
		patch := fmt.Sprintf(`{"spec":{"value":%d}}`, rng.IntN(1000))
		_, err := widgets.Namespace(ns).Patch(ctx, victim, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err == nil
	}
	if err := widgets.Namespace(ns).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		return false
	}
	*live = append((*live)[:i], (*live)[i+1:]...)
	return true
}

// convergenceTimes polls every informer at once until its cache and each
// of its handlers' last states equal want, and returns how long each took.
func convergenceTimes(t *testing.T, want widgetState, runs []*informerRun, timeout time.Duration) []time.Duration {
	t.Helper()
	start := time.Now()
	times := make([]time.Duration, len(runs))
	why := make([]string, len(runs))
	for left := len(runs); left > 0 && time.Since(start) < timeout; time.Sleep(20 * time.Millisecond) {
		for i, run := range runs {
			if times[i] != 0 {
				continue
			}
			if why[i] = convergenceGap(run, want); why[i] == "" {
				times[i] = time.Since(start)
				left--
			}
		}
	}
	for i, run := range runs {
		if times[i] == 0 {
			t.Errorf("%s: not converged within %v: %s", run.impl.name, timeout, why[i])
		}
	}
	return times
}

// convergenceGap is how run's cache or handlers differ from want; empty
// once they match.
func convergenceGap(run *informerRun, want widgetState) string {
	got, err := cacheState(run.informer)
	if err != nil {
		return err.Error()
	}
	if d := want.diff(got); d != "" {
		return "cache: " + d
	}
	for i, rec := range append([]*eventRecorder{run.recorder}, run.late...) {
		if d := rec.finalStateDiff(want); d != "" {
			return fmt.Sprintf("handler %d: %s", i, d)
		}
	}
	return ""
}

// checkNoGoroutineGrowth waits until no goroutine of ours or of the proxy
// is left and the process is back near the goroutine count it had before
// the seed (the API server's own count moves a little across a restart).
func checkNoGoroutineGrowth(t *testing.T, before int) {
	t.Helper()
	const slack = 100
	eventually(t, 30*time.Second, "goroutines of the seed exit", func() (bool, string) {
		for _, marker := range []string{ourPackage, "integration.(*chaosProxy)"} {
			if left := goroutinesMentioning(marker); len(left) > 0 {
				return false, string(left[0])
			}
		}
		now := runtime.NumGoroutine()
		return now <= before+slack, fmt.Sprintf("%d goroutines, %d before the seed", now, before)
	})
}
