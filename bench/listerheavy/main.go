// Command listerheavy measures a lister-heavy controller workload, the way a
// kube-controller-manager reads its caches, on client-go's informers and on
// ours (default and compact storage), against a real kube-apiserver v1.37.2
// and etcd v3.7.3 (see README.md).
//
// The same binary plays three roles, chosen by -role: the harness (default)
// starts etcd and kube-apiserver as child processes, creates the pods,
// starts one workload process per variant and drives the updates; "etcd"
// runs the embedded etcd; "workload" runs the controllers on one variant's
// informer factory and reports what they cost. Each variant runs alone in
// its process, so its CPU time and memory are its own.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// config is the command line.
type config struct {
	role       string
	apiserver  string
	pods       int
	namespaces int
	rounds     int
	load       time.Duration
	idle       time.Duration
	rate       int
	variants   string
	workers    int
	workDir    string
	keep       bool
	etcdDir    string
	etcdPort   int
	etcdPeer   int
	host       string
	token      string
	variant    string
	cpuProfile string
}

func main() {
	var c config
	flag.StringVar(&c.role, "role", "harness", "harness, etcd or workload (the last two are started by the harness)")
	flag.StringVar(&c.apiserver, "apiserver", "../kubeapiserver/bin/kube-apiserver", "kube-apiserver v1.37.2 binary")
	flag.IntVar(&c.pods, "pods", 5000, "pods to create")
	flag.IntVar(&c.namespaces, "namespaces", 20, "namespaces the pods are spread over")
	flag.IntVar(&c.rounds, "rounds", 1, "rounds; each starts every variant once, in alternating order")
	flag.DurationVar(&c.load, "load", 120*time.Second, "length of the update phase")
	flag.DurationVar(&c.idle, "idle", 60*time.Second, "length of the idle phase after it (no updates; periodic work goes on)")
	flag.IntVar(&c.rate, "rate", 20, "pod status updates per second in the update phase")
	flag.StringVar(&c.variants, "variants", "client-go,ours,compact", "comma-separated variants (see README.md)")
	flag.IntVar(&c.workers, "workers", 16, "concurrent requests while creating pods")
	flag.StringVar(&c.workDir, "dir", "", "working directory for etcd data, keys and logs (default: a new temporary one)")
	flag.BoolVar(&c.keep, "keep", false, "keep the working directory")
	flag.StringVar(&c.etcdDir, "etcd-dir", "", "etcd role: data directory")
	flag.IntVar(&c.etcdPort, "etcd-port", 0, "etcd role: client port")
	flag.IntVar(&c.etcdPeer, "etcd-peer-port", 0, "etcd role: peer port")
	flag.StringVar(&c.host, "host", "", "workload role: API server URL")
	flag.StringVar(&c.token, "token", "", "workload role: bearer token")
	flag.StringVar(&c.variant, "variant", "", "workload role: the variant to run")
	flag.StringVar(&c.cpuProfile, "cpu-profile", "", "directory where each workload writes a CPU profile of its update phase (<variant>-<pid>.pprof)")
	flag.Parse()

	var err error
	switch c.role {
	case "harness":
		err = runHarness(c)
	case "etcd":
		err = runEtcd(c)
	case "workload":
		err = runWorkload(c)
	default:
		err = fmt.Errorf("unknown -role %q", c.role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "listerheavy:", err)
		os.Exit(1)
	}
}
