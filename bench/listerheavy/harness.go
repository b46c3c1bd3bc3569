package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// result is one variant's reports in one round.
type result struct {
	sync  syncReport
	final finalReport
}

// runHarness is the harness role: servers up, pods created, then the rounds.
func runHarness(c config) error {
	variants := strings.Split(c.variants, ",")
	if c.rounds < 1 || c.pods < 1 || c.rate < 1 || c.namespaces < 1 || len(variants) == 0 {
		return fmt.Errorf("need -rounds, -pods, -rate, -namespaces ≥1 and some -variants")
	}
	loadStart := loadAvg()
	dir := c.workDir
	if dir == "" {
		d, err := os.MkdirTemp("", "listerheavy-")
		if err != nil {
			return err
		}
		dir = d
	}
	if !c.keep {
		defer os.RemoveAll(dir)
	}
	began := time.Now()
	srv, err := startServers(c.apiserver, dir)
	if err != nil {
		return err
	}
	defer srv.stop()
	fmt.Printf("kube-apiserver ready in %.1fs (%s)\n", time.Since(began).Seconds(), srv.host)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(srv.restConfig())
	if err != nil {
		return err
	}
	t0 := time.Now()
	refs, err := createPods(ctx, cs, c.pods, c.namespaces, c.workers)
	if err != nil {
		return err
	}
	fmt.Printf("created %d pods in %d namespaces in %.1fs (load %s)\n", len(refs), c.namespaces, time.Since(t0).Seconds(), loadAvg())
	var rounds []map[string]result
	for r := range c.rounds {
		order := slices.Clone(variants)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		res, load, err := runRound(ctx, c, srv, cs, refs, order)
		if err != nil {
			return fmt.Errorf("round %d: %w", r+1, err)
		}
		rounds = append(rounds, res)
		fmt.Printf("round %d: %d updates sent, %d failed, %d skipped in %.0fs (load %s)\n",
			r+1, load.sent, load.failed, load.skipped, load.elapsed.Seconds(), loadAvg())
	}
	printReport(os.Stdout, c, variants, rounds, loadStart, loadAvg())
	return nil
}

// child is one running workload process.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// runRound starts each variant's process in order, each syncing alone while
// the earlier ones idle, then runs the update and idle phases with all of
// them reading.
func runRound(ctx context.Context, c config, srv *servers, cs kubernetes.Interface, refs []podRef, order []string) (map[string]result, loadResult, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, loadResult{}, err
	}
	res := map[string]result{}
	children := map[string]*child{}
	defer func() {
		for _, ch := range children {
			ch.in.Close()
			_ = ch.cmd.Wait()
		}
	}()
	for _, v := range order {
		ch, err := startChild(self, srv, v, c.cpuProfile)
		if err != nil {
			return nil, loadResult{}, err
		}
		children[v] = ch
		var s syncReport
		if err := ch.read(&s); err != nil {
			return nil, loadResult{}, fmt.Errorf("%s sync: %w", v, err)
		}
		res[v] = result{sync: s}
		fmt.Printf("  %s synced in %.1fs, %.1fs CPU\n", v, s.WallSec, s.CPUSec)
	}
	tell := func(line string) {
		for _, ch := range children {
			fmt.Fprintln(ch.in, line)
		}
	}
	tell("load")
	load := drive(ctx, cs, refs, c.rate, c.load)
	tell("idle")
	time.Sleep(c.idle)
	tell("report")
	for v, ch := range children {
		r := res[v]
		if err := ch.read(&r.final); err != nil {
			return nil, loadResult{}, fmt.Errorf("%s report: %w", v, err)
		}
		res[v] = r
	}
	return res, load, nil
}

func startChild(self string, srv *servers, variant, cpuProfile string) (*child, error) {
	cmd := exec.Command(self, "-role=workload", "-variant="+variant, "-host="+srv.host, "-token="+srv.token,
		"-cpu-profile="+cpuProfile)
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
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
