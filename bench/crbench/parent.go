package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// bench is the parent's state: the servers, the client that writes, the
// children's kubeconfig and where the children's files go.
type bench struct {
	c      config
	dir    string
	kcPath string
	cl     client.Client
	cs     kubernetes.Interface
	drv    *driver
	spawns int
}

func parent(c config) error {
	env := &envtest.Environment{}
	if err := os.Setenv("TEST_ASSET_KUBE_APISERVER", c.apiserver); err != nil {
		return err
	}
	if err := os.Setenv("TEST_ASSET_ETCD", c.etcd); err != nil {
		return err
	}
	// 100k pods with status and their revisions outgrow etcd's default
	// 2 GiB quota before the apiserver compacts.
	env.ControlPlane.Etcd = &envtest.Etcd{}
	env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.Itoa(8<<30))
	cfg, err := env.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	user, err := env.AddUser(envtest.User{Name: "bench", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	b := &bench{c: c}
	if b.dir, err = os.MkdirTemp("", "crbench"); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(b.dir) }()
	b.kcPath = filepath.Join(b.dir, "kubeconfig")
	if err := os.WriteFile(b.kcPath, kc, 0o600); err != nil {
		return err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, -1
	if b.cl, err = client.New(cfg, client.Options{}); err != nil {
		return err
	}
	if b.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	b.drv = &driver{cl: b.cl, pods: c.pods, rate: c.rate}
	loadStart := loadAvg()
	start := time.Now()
	if err := load(b.cl, c.pods, c.secrets, c.status); err != nil {
		return err
	}
	fmt.Printf("created %d pods (status written: %v) and %d secrets in %s (load %s -> %s)\n", c.pods, c.status, c.secrets,
		time.Since(start).Round(time.Second), loadStart, loadAvg())
	var measured []measureRound
	var restarted []restartRound
	for r := range c.rounds {
		if c.measure {
			m, err := b.measureRound(r)
			if err != nil {
				return fmt.Errorf("measure round %d: %w", r+1, err)
			}
			measured = append(measured, m)
		}
		if c.restart {
			rr, err := b.restartRound(r)
			if err != nil {
				return fmt.Errorf("restart round %d: %w", r+1, err)
			}
			restarted = append(restarted, rr)
		}
	}
	report(os.Stdout, c, measured, restarted)
	return nil
}

// proc is one running child.
type proc struct {
	impl string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *json.Decoder
	log  string
}

// spawn starts a child operator; extra are its further flags.
func (b *bench) spawn(impl, mode string, extra ...string) (*proc, error) {
	b.spawns++
	p := &proc{impl: impl, log: filepath.Join(b.dir, fmt.Sprintf("child-%02d-%s.log", b.spawns, impl))}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := append([]string{"-role=child", "-impl=" + impl, "-child-mode=" + mode, "-child-kubeconfig=" + b.kcPath,
		fmt.Sprint("-pods=", b.c.pods), fmt.Sprint("-secrets=", b.c.secrets)}, extra...)
	// The child's clock starts here: its ready times include exec and the
	// Go runtime's start.
	args = append(args, fmt.Sprint("-started-at=", time.Now().UnixNano()))
	p.cmd = exec.Command(self, args...)
	p.cmd.Stderr = logf
	if b.c.gogc != "" {
		p.cmd.Env = append(os.Environ(), "GOGC="+b.c.gogc)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = json.NewDecoder(bufio.NewReader(out))
	return p, p.cmd.Start()
}

// read decodes the child's next line into v; on failure it kills the
// child and returns its log's tail.
func (p *proc) read(v any) error {
	if err := p.out.Decode(v); err != nil {
		p.kill()
		tail, _ := os.ReadFile(p.log)
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return fmt.Errorf("%s: %w; its log ends:\n%s", p.impl, err, tail)
	}
	return nil
}

func (p *proc) send(line string) { fmt.Fprintln(p.in, line) }

// kill ends the child as an OOM kill would (SIGKILL) and reaps it.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// measureRound runs each operator once in measure mode.
type measureRound struct {
	starts []syncReport
	// windows are each child's CPU windows by reconciler: "noop" returns
	// at once, "get" reads the object from the cache first.
	windows map[string][]windowResult
	server  []serverCounts
	load    string
}

// windowResult is one child's CPU window with the updates the parent sent.
type windowResult struct {
	windowReport
	Sent, Failed int64
	Load         string
}

func (w windowResult) cpuPerEventMicros() float64 {
	if w.Sent == 0 {
		return 0
	}
	return (w.UserCPU + w.SysCPU) / float64(w.Sent) * 1e6
}

func (b *bench) measureRound(round int) (measureRound, error) {
	m := measureRound{windows: map[string][]windowResult{}}
	for _, impl := range []string{"controller-runtime", "crcache"} {
		var extra []string
		if b.c.heapProfileDir != "" {
			extra = append(extra, "-heap-profile-out="+filepath.Join(b.c.heapProfileDir, fmt.Sprintf("%s-round%d.pprof", impl, round+1)))
		}
		if b.c.cpuProfileDir != "" {
			extra = append(extra, "-cpu-profile-out="+filepath.Join(b.c.cpuProfileDir, fmt.Sprintf("%s-round%d.pprof", impl, round+1)))
		}
		before, err := b.scrape()
		if err != nil {
			return m, err
		}
		p, err := b.spawn(impl, "measure", extra...)
		if err != nil {
			return m, err
		}
		var r syncReport
		if err := p.read(&r); err != nil {
			return m, err
		}
		after, err := b.scrape()
		if err != nil {
			p.kill()
			return m, err
		}
		srv := after.minus(before)
		fmt.Printf("round %d %-18s synced %.2fs (from process start %.2fs, first reconcile %.2fs), CPU %.2fs, peak heap %.1f MB (live %.1f, goal %.1f, %d GCs), steady %.1f MB, Get p99 %.0fµs, List p50 %.0fµs (%d), requests %+v, server %s; load %s\n",
			round+1, impl, r.SyncSeconds, r.ProcessToSynced, r.ProcessToFirstReconcile, r.CPUToReady, r.PeakHeapMB, r.PeakLiveMB, r.PeakGoalMB, r.GCs,
			r.SteadyHeapMB, r.GetP99Micros, r.ListP50Micros, r.ListMatched, r.Requests, srv, loadAvg())
		u := r.UntilReconciled
		fmt.Printf("    at the peak until synced (%.2fs): heap %.1f MB, live %.1f MB, goal %.1f MB, %d GCs, %d reconciled\n",
			r.AtPeak.AtSeconds, r.AtPeak.HeapMB, r.AtPeak.LiveMB, r.AtPeak.GoalMB, r.AtPeak.GCs, r.AtPeak.Reconciled)
		fmt.Printf("    until every object reconciled: peak heap %.1f MB (live %.1f, goal %.1f, %d GCs), at %.2fs with %d reconciled\n",
			u.PeakHeapMB, u.PeakLiveMB, u.PeakGoalMB, u.GCs, u.AtPeak.AtSeconds, u.AtPeak.Reconciled)
		m.starts = append(m.starts, r)
		m.server = append(m.server, srv)
		for _, reconciler := range []string{"noop", "get"} {
			if b.c.window <= 0 {
				break
			}
			w, err := b.cpuWindow(p, reconciler)
			if err != nil {
				return m, err
			}
			fmt.Printf("round %d %-18s window %.0fs, %s reconciler: %d updates sent (%d failed), %d reconciles, CPU user %.2fs sys %.2fs = %.1f µs/update, allocated %.0f MB, %d GCs; load %s\n",
				round+1, impl, w.Seconds, reconciler, w.Sent, w.Failed, w.Reconciles, w.UserCPU, w.SysCPU, w.cpuPerEventMicros(), w.AllocMB, w.GCs, w.Load)
			m.windows[reconciler] = append(m.windows[reconciler], w)
		}
		p.send("stop")
		_ = p.cmd.Wait()
	}
	m.load = loadAvg()
	return m, nil
}

// cpuWindow drives the status updates for the window while the child
// measures its CPU with the reconciler given.
func (b *bench) cpuWindow(p *proc, reconciler string) (windowResult, error) {
	var w windowResult
	p.send("window " + reconciler)
	stop := make(chan struct{})
	t := time.AfterFunc(b.c.window, func() { close(stop) })
	w.Sent, w.Failed = b.drv.run(stop)
	t.Stop()
	p.send("end")
	if err := p.read(&w.windowReport); err != nil {
		return w, err
	}
	w.Load = loadAvg()
	return w, nil
}

// restartStart is one start of a restart round.
type restartStart struct {
	name     string
	sync     syncReport
	server   serverCounts
	snapshot snapshotReport
	// diskBytes is the snapshot directory's size when the child was killed.
	diskBytes int64
	load      string
}

type restartRound struct {
	starts       []restartStart
	sent, failed int64
}

// restartRound runs controller-runtime's cache cold, crcache cold (then
// killed once it synced and saved a snapshot) and crcache warm from that
// snapshot, with the status updates flowing throughout.
func (b *bench) restartRound(round int) (rr restartRound, err error) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		rr.sent, rr.failed = b.drv.run(stop)
	}()
	defer func() { close(stop); <-done }()
	snapDir := filepath.Join(b.dir, "snapshots")
	if err := os.RemoveAll(snapDir); err != nil {
		return rr, err
	}
	if err := os.MkdirAll(snapDir, 0o700); err != nil {
		return rr, err
	}
	for _, s := range []struct{ name, impl, dir string }{
		{"controller-runtime cold", "controller-runtime", ""},
		{"crcache cold", "crcache", snapDir},
		{"crcache warm", "crcache", snapDir},
	} {
		var extra []string
		if s.dir != "" {
			extra = append(extra, "-snapshot-dir="+s.dir)
		}
		if b.c.cpuProfileDir != "" {
			name := fmt.Sprintf("%s-round%d.pprof", strings.ReplaceAll(s.name, " ", "-"), round+1)
			extra = append(extra, "-cpu-profile-out="+filepath.Join(b.c.cpuProfileDir, name))
		}
		before, err := b.scrape()
		if err != nil {
			return rr, err
		}
		p, err := b.spawn(s.impl, "restart", extra...)
		if err != nil {
			return rr, err
		}
		st := restartStart{name: s.name}
		if err := p.read(&st.sync); err != nil {
			return rr, err
		}
		after, err := b.scrape()
		if err != nil {
			p.kill()
			return rr, err
		}
		st.server = after.minus(before)
		if s.name == "crcache cold" {
			if err := p.read(&st.snapshot); err != nil {
				return rr, err
			}
		}
		p.kill()
		if s.dir != "" {
			st.diskBytes = dirBytes(s.dir)
		}
		st.load = loadAvg()
		r := st.sync
		fmt.Printf("restart round %d %-24s synced %.2fs, first reconcile %.2fs, ready %.2fs from process start (CPU %.2fs), peak heap %.1f MB; requests %+v; server %s; outcomes %v",
			round+1, s.name, r.ProcessToSynced, r.ProcessToFirstReconcile, r.ProcessToReady, r.CPUToReady, r.PeakHeapMB, r.Requests, st.server, r.Outcomes)
		if st.snapshot.Saves > 0 {
			fmt.Printf("; snapshots %.1f MB for %d objects, saved in %.2fs", mbi(st.snapshot.Bytes), st.snapshot.Objects, st.snapshot.SaveSec)
		}
		if st.diskBytes > 0 {
			fmt.Printf("; on disk after the kill %.1f MB", mbi(st.diskBytes))
		}
		fmt.Printf("; load %s\n", st.load)
		rr.starts = append(rr.starts, st)
	}
	return rr, nil
}

func mbi(b int64) float64 { return float64(b) / (1 << 20) }

// dirBytes sums the sizes of the regular files under dir (snapshots,
// journals, lock files).
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// serverCounts are kube-apiserver's own counts of pod and secret LISTs
// (apiserver_request_total), the bytes of their responses
// (apiserver_response_sizes_sum) and completed watch-lists
// (apiserver_watch_list_duration_seconds_count), whoever asked.
type serverCounts struct {
	Lists, ListBytes, WatchLists float64
}

func (s serverCounts) minus(o serverCounts) serverCounts {
	return serverCounts{s.Lists - o.Lists, s.ListBytes - o.ListBytes, s.WatchLists - o.WatchLists}
}

func (s serverCounts) String() string {
	return fmt.Sprintf("LISTs %.0f (%.2f MB), watch-lists %.0f", s.Lists, s.ListBytes/(1<<20), s.WatchLists)
}

// scrape reads the server's counts from its /metrics.
func (b *bench) scrape() (serverCounts, error) {
	raw, err := b.cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		return serverCounts{}, fmt.Errorf("server metrics: %w", err)
	}
	var s serverCounts
	for line := range strings.Lines(string(raw)) {
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok || !(strings.Contains(labels, `resource="pods"`) || strings.Contains(labels, `resource="secrets"`)) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		list := strings.Contains(labels, `verb="LIST"`)
		switch {
		case name == "apiserver_request_total" && list:
			s.Lists += v
		case name == "apiserver_response_sizes_sum" && list:
			s.ListBytes += v
		case name == "apiserver_watch_list_duration_seconds_count":
			s.WatchLists += v
		}
	}
	return s, nil
}

// loadAvg is uptime's load averages.
func loadAvg() string {
	out, err := exec.Command("uptime").Output()
	if err != nil {
		return "?"
	}
	_, avg, _ := strings.Cut(strings.TrimSpace(string(out)), "load average: ")
	return avg
}
