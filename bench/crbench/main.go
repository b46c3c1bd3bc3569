// Command crbench measures an operator watching Pods and Secrets on a real
// kube-apiserver (started by envtest from -apiserver and -etcd), once with
// controller-runtime v0.25.3's cache and DefaultTransform:
// TransformStripManagedFields() (what users run today) and once with
// crcache (compact storage, managedFields stripped), each in its own
// process, side by side in one run on one server: the objects are created
// once (pods with the status a kubelet writes, unless -status=false) and
// serve every child.
//
// Measure rounds (-rounds, on unless -measure=false) report per child the
// time to sync, the peak heap from start to synced, the steady heap after
// sync (after GC), Get p99 over cached pods, List(MatchingLabels) p50
// selecting 1% of the pods and, with -window, the CPU (getrusage, user+sys)
// per pod status update over a window of -rate updates/s spread over all
// pods.
//
// Restart rounds (-restart) kill and restart the operator as an OOM kill
// would: controller-runtime's cache cold (the baseline), crcache cold with
// snapshots on (InformerOptions.Snapshot, Options.SnapshotDir), SIGKILL
// once it synced and saved a snapshot, then crcache again on the same
// directory. Each start reports the time from the process's start to every
// cache synced and to the first reconcile, and the LIST and watch-list
// requests it made, counted in its transport and, at the server, from
// kube-apiserver's metrics. -rate status updates/s flow throughout.
//
// Usage:
//
//	go run . -apiserver PATH -etcd PATH [-pods 2000] [-secrets 1000] [-rounds 1]
//	    [-window 240s] [-rate 100] [-restart] [-measure=false] [-status=false]
//	    [-heap-profile DIR] [-cpu-profile DIR] [-gogc 100]
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

// groups is how many label groups the pods are spread over: a
// MatchingLabels on one selects 1%.
const groups = 100

// config is the command line of both roles.
type config struct {
	// parent
	apiserver, etcd string
	rounds          int
	measure         bool
	restart         bool
	status          bool
	window          time.Duration
	rate            int
	heapProfileDir  string
	cpuProfileDir   string
	gogc            string
	// both
	pods, secrets int
	// child
	impl, kubeconfig, mode string
	startedAt              int64
	snapshotDir            string
	snapshotInterval       time.Duration
	heapProfile            string
	cpuProfile             string
}

func main() {
	var c config
	role := flag.String("role", "parent", "parent (servers, load, children) or child (one operator)")
	flag.StringVar(&c.impl, "impl", "", "child: controller-runtime or crcache")
	flag.StringVar(&c.kubeconfig, "child-kubeconfig", "", "child: the servers' kubeconfig")
	flag.StringVar(&c.mode, "child-mode", "measure", "child: measure (sync, heap, reads, CPU window) or restart (time to ready, then wait to be killed)")
	flag.Int64Var(&c.startedAt, "started-at", 0, "child: when the parent started the process (Unix nanoseconds)")
	flag.StringVar(&c.snapshotDir, "snapshot-dir", "", "child (crcache): Options.SnapshotDir, snapshots on")
	flag.DurationVar(&c.snapshotInterval, "snapshot-interval", 10*time.Second, "child (crcache): InformerOptions.SnapshotInterval")
	flag.StringVar(&c.heapProfile, "heap-profile-out", "", "child: write the heap profile taken at the peak to this file")
	flag.StringVar(&c.cpuProfile, "cpu-profile-out", "", "child: write a CPU profile from the start to ready to this file (restart mode), or of each CPU window beside it, <file>-<noop|get>.pprof (measure mode)")
	flag.StringVar(&c.apiserver, "apiserver", "", "kube-apiserver binary")
	flag.StringVar(&c.etcd, "etcd", "", "etcd binary")
	flag.IntVar(&c.pods, "pods", 2000, "pods to create")
	flag.IntVar(&c.secrets, "secrets", 1000, "secrets to create")
	flag.IntVar(&c.rounds, "rounds", 1, "rounds of each enabled phase")
	flag.BoolVar(&c.measure, "measure", true, "run the measure rounds (sync, heap, reads, CPU window)")
	flag.BoolVar(&c.restart, "restart", false, "run the kill-and-restart rounds")
	flag.BoolVar(&c.status, "status", true, "write each pod's status as a kubelet would after creating it")
	flag.DurationVar(&c.window, "window", 0, "CPU window of the measure rounds (0 skips it)")
	flag.IntVar(&c.rate, "rate", 100, "pod status updates per second during the CPU window and the restart rounds")
	flag.StringVar(&c.heapProfileDir, "heap-profile", "", "write each child's heap profile at its peak (measure rounds) into this directory")
	flag.StringVar(&c.cpuProfileDir, "cpu-profile", "", "write each restart start's CPU profile, from the start to ready, and each measure child's CPU windows into this directory")
	flag.StringVar(&c.gogc, "gogc", "", "GOGC of the children (empty: inherited)")
	flag.Parse()
	// controller-runtime's logs (warnings on creates, the children's
	// managers) are not what is measured.
	crlog.SetLogger(logr.Discard())
	var err error
	if *role == "child" {
		err = child(c)
	} else {
		err = parent(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crbench:", err)
		os.Exit(1)
	}
}
