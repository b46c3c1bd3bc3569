// Command kubeapiserver measures pod informers, ours beside client-go's,
// against a real kube-apiserver v1.37.2 and etcd v3.7.3 (see README.md).
//
// The same binary plays four roles, chosen by -role: the harness (default)
// starts etcd and kube-apiserver as child processes, creates the pods, then
// starts one child process per informer variant and drives the update load;
// "etcd" runs the embedded etcd; "informer" runs one informer and reports
// what it cost; "restart" runs one start of an informer for -mode=restart
// (cold, or warm from its snapshot) and reports what it cost. Each informer
// runs alone in its process, so its process CPU time and allocation
// counters are its own: neither the servers' nor the load generator's work
// is counted.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// config is the harness's command line.
type config struct {
	role      string
	mode      string
	changed   float64
	snapshot  string
	apiserver string
	pods      int
	rounds    int
	steady    time.Duration
	rate      int
	variants  string
	workers   int
	workDir   string
	keep      bool
	etcdDir   string
	etcdPort  int
	etcdPeer  int
	host      string
	token     string
	variant   string
	// heapProfile is the harness's directory for the informers' heap
	// profiles at their highest live heap, and an informer's file in it.
	heapProfile string
	// cpuProfile is the harness's directory for the informers' CPU
	// profiles of the steady phase, and an informer's file in it.
	cpuProfile string
}

func main() {
	var c config
	flag.StringVar(&c.role, "role", "harness", "harness, etcd, informer or restart (the last three are started by the harness)")
	flag.StringVar(&c.mode, "mode", "bench", "harness: bench (sync and steady phase of each variant) or restart (cold and warm starts, see README.md)")
	flag.Float64Var(&c.changed, "changed", 0.01, "restart mode: share of the pods changed while ours is down (half updated, a quarter deleted, a quarter created)")
	flag.StringVar(&c.snapshot, "snapshot", "", "restart role: snapshot file of variant ours")
	flag.StringVar(&c.apiserver, "apiserver", "bin/kube-apiserver", "kube-apiserver binary (make realserver-bench builds it)")
	flag.IntVar(&c.pods, "pods", 20000, "pods to create")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds; each starts every variant once, in alternating order")
	flag.DurationVar(&c.steady, "steady", 60*time.Second, "length of the steady update phase of each round")
	flag.IntVar(&c.rate, "rate", 100, "pod status updates per second in the steady phase")
	flag.StringVar(&c.variants, "variants", defaultVariants, "comma-separated informer variants (see README.md)")
	flag.IntVar(&c.workers, "workers", 16, "concurrent requests while creating pods")
	flag.StringVar(&c.workDir, "dir", "", "working directory for etcd data, keys and logs (default: a new temporary one)")
	flag.BoolVar(&c.keep, "keep", false, "keep the working directory")
	flag.StringVar(&c.etcdDir, "etcd-dir", "", "etcd role: data directory")
	flag.IntVar(&c.etcdPort, "etcd-port", 0, "etcd role: client port")
	flag.IntVar(&c.etcdPeer, "etcd-peer-port", 0, "etcd role: peer port")
	flag.StringVar(&c.host, "host", "", "informer role: API server URL")
	flag.StringVar(&c.token, "token", "", "informer role: bearer token")
	flag.StringVar(&c.variant, "variant", "", "informer role: the variant to run")
	flag.StringVar(&c.cpuProfile, "cpu-profile", "", "harness: write each informer's CPU profile of the steady phase into this directory; informer role: the file")
	flag.StringVar(&c.heapProfile, "heap-profile", "", "harness: write each informer's heap profile at its highest live heap into this directory; informer role: the file")
	flag.Parse()

	var err error
	switch c.role {
	case "harness":
		err = runHarness(c)
	case "etcd":
		err = runEtcd(c)
	case "informer":
		err = runInformer(c)
	case "restart":
		err = runRestartChild(c)
	default:
		err = fmt.Errorf("unknown -role %q", c.role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeapiserver:", err)
		os.Exit(1)
	}
}
