package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// cluster is the servers and the pods the harness created on them.
type cluster struct {
	dir  string
	srv  *servers
	cs   kubernetes.Interface
	refs []podRef
}

// runHarness is the harness role: servers up, pods created, then the
// rounds of the chosen -mode.
func runHarness(c config) error {
	variants := strings.Split(c.variants, ",")
	if c.rounds < 1 || c.pods < 1 || c.rate < 1 || len(variants) == 0 {
		return fmt.Errorf("need -rounds, -pods, -rate ≥1 and some -variants")
	}
	if c.mode != "bench" && c.mode != "restart" {
		return fmt.Errorf("unknown -mode %q (bench or restart)", c.mode)
	}
	loadStart := loadAvg()
	cl, cleanup, err := setUp(c)
	if err != nil {
		return err
	}
	defer cleanup()
	ctx := context.Background()
	if c.mode == "restart" {
		return runRestart(ctx, c, cl, loadStart)
	}
	var rounds []roundResult
	next := 0
	for r := range c.rounds {
		order := slices.Clone(variants)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		res, err := runRound(ctx, c, cl.srv, cl.cs, cl.refs, &next, order)
		if err != nil {
			return fmt.Errorf("round %d: %w", r+1, err)
		}
		rounds = append(rounds, res)
		fmt.Printf("round %d done (load %s)\n", r+1, loadAvg())
	}
	printTables(os.Stdout, c, variants, rounds, loadStart, loadAvg())
	return nil
}

// setUp starts the servers in the working directory and creates the pods;
// cleanup stops the servers and removes the directory unless -keep.
func setUp(c config) (*cluster, func(), error) {
	dir := c.workDir
	if dir == "" {
		d, err := os.MkdirTemp("", "realserver-bench-")
		if err != nil {
			return nil, nil, err
		}
		dir = d
	}
	removeDir := func() {
		if !c.keep {
			os.RemoveAll(dir)
		}
	}
	began := time.Now()
	srv, err := startServers(c, dir)
	if err != nil {
		removeDir()
		return nil, nil, err
	}
	cleanup := func() { srv.stop(); removeDir() }
	fmt.Printf("kube-apiserver ready in %.1fs (%s)\n", time.Since(began).Seconds(), srv.host)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(srv.restConfig())
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	t0 := time.Now()
	refs, err := createPods(ctx, cs, c.pods, c.workers)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	fmt.Printf("created %d pods in %.1fs (load %s)\n", len(refs), time.Since(t0).Seconds(), loadAvg())
	sizes, err := measureSizes(ctx, cs)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	fmt.Printf("pod protobuf size as served (%d pods read back): mean %d B, median %d B, managedFields %.1f%%"+
		" (the fixture's own: %d B, %.1f%%)\n", sizes.count, sizes.meanBytes, sizes.medianBytes,
		100*sizes.managedFieldsShare, sizes.fixtureBytes, 100*sizes.fixtureManagedFieldShare)
	return &cluster{dir: dir, srv: srv, cs: cs, refs: refs}, cleanup, nil
}

// roundResult is one round: every variant's sync and steady reports.
type roundResult struct {
	sync   map[string]syncReport
	steady map[string]steadyReport
	load   loadResult
}

// child is one running informer process.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// runRound starts the variants one after another (each syncs alone, while
// the ones before it sit idle), then runs the steady phase with all of them
// watching, and collects their reports.
func runRound(ctx context.Context, c config, srv *servers, cs kubernetes.Interface, refs []podRef, next *int, order []string) (roundResult, error) {
	res := roundResult{sync: map[string]syncReport{}, steady: map[string]steadyReport{}}
	var children []*child
	defer func() {
		for _, ch := range children {
			ch.in.Close()
			_ = ch.cmd.Process.Kill()
			_ = ch.cmd.Wait()
		}
	}()
	for _, v := range order {
		ch, err := startChild(srv, v, c)
		if err != nil {
			return res, err
		}
		children = append(children, ch)
		var rep syncReport
		if err := ch.read(&rep); err != nil {
			return res, fmt.Errorf("%s sync: %w", v, err)
		}
		if rep.Pods != len(refs) {
			return res, fmt.Errorf("%s synced %d pods, want %d", v, rep.Pods, len(refs))
		}
		res.sync[v] = rep
		fmt.Printf("  %-18s synced %d pods: %.2fs wall, %.2fs CPU, %.0f MiB allocated, peak live %.0f MiB (heap %.0f MiB), steady %.0f MiB\n",
			v, rep.Pods, rep.WallSec, rep.CPUSec, mb(rep.AllocBytes), mb(rep.PeakLive), mb(rep.PeakHeap), mb(rep.SteadyLive))
		var ready readyReport
		if err := ch.read(&ready); err != nil {
			return res, fmt.Errorf("%s handler sync: %w", v, err)
		}
		fmt.Printf("  %-18s handler has its initial list %.2fs after the start\n", v, ready.HandlerSyncedSec)
	}
	for _, ch := range children {
		fmt.Fprintln(ch.in, "start")
	}
	res.load = drive(ctx, cs, refs, next, c.rate, c.steady)
	// Let the last events reach every informer before the counters stop.
	time.Sleep(3 * time.Second)
	for _, ch := range children {
		fmt.Fprintln(ch.in, "stop")
	}
	for i, ch := range children {
		var rep steadyReport
		if err := ch.read(&rep); err != nil {
			return res, fmt.Errorf("%s steady: %w", order[i], err)
		}
		res.steady[order[i]] = rep
		fmt.Printf("  %-18s steady: %d events (%d more after the phase), %.2fs CPU\n", order[i], rep.Events, rep.LateEvents, rep.CPUSec)
	}
	fmt.Printf("  steady: %d updates in %.1fs (%d failed, %d skipped)\n",
		res.load.sent, res.load.elapsed.Seconds(), res.load.failed, res.load.skipped)
	return res, nil
}

// startChild starts variant's informer process; it is told the pod count,
// which a memory budget scales with, and where to write its profiles.
func startChild(srv *servers, variant string, c config) (*child, error) {
	extra := []string{fmt.Sprintf("-pods=%d", c.pods)}
	if c.heapProfile != "" {
		extra = append(extra, "-heap-profile="+filepath.Join(c.heapProfile, fmt.Sprintf("%s-%d.pprof", variant, time.Now().Unix())))
	}
	if c.cpuProfile != "" {
		extra = append(extra, "-cpu-profile="+filepath.Join(c.cpuProfile, fmt.Sprintf("%s-%d.cpu.pprof", variant, time.Now().Unix())))
	}
	return spawn(srv, "informer", variant, extra...)
}

// spawn starts this binary in role for variant against srv, with extra
// flags, its stdin and stdout the harness's line protocol.
func spawn(srv *servers, role, variant string, extra ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := append([]string{"-role=" + role, "-variant=" + variant, "-host=" + srv.host, "-token=" + srv.token}, extra...)
	cmd := exec.Command(self, args...)
	cmd.Env = os.Environ()
	if strings.HasSuffix(variant, "-list") {
		cmd.Env = append(cmd.Env, "KUBE_FEATURE_WatchListClient=false")
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = dieWithParent()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	return &child{cmd: cmd, in: in, out: sc}, nil
}

// read decodes the child's next JSON line into v.
func (ch *child) read(v any) error {
	if !ch.out.Scan() {
		if err := ch.out.Err(); err != nil {
			return err
		}
		return io.ErrUnexpectedEOF
	}
	return json.Unmarshal(ch.out.Bytes(), v)
}

// loadAvg is /proc/loadavg's first three fields.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// mb is b in MiB, the unit of every figure the reports print.
func mb(b uint64) float64 { return float64(b) / (1 << 20) }
