// Command podwatch runs an openinformer SharedIndexInformer end to end, the
// way most controllers get theirs: from the shared informer factory
// (github.com/openinformer/cache/informers, client-go's factory API), with a
// workqueue controller that reports pod adds, updates and deletes, and keeps
// cache statistics.
//
// By default it needs no cluster: it starts an embedded fake API server
// (github.com/openinformer/cache/fake) and churns pods on it, dropping the
// watch once and forcing a 410 relist once along the way, then checks that
// the informer's cache converged to the server's contents. With --kubeconfig
// it watches a real cluster instead.
//
//	go run ./examples/podwatch --duration 10s --objects 500
//	go run ./examples/podwatch --kubeconfig ~/.kube/config --namespace default
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/informers"
)

type config struct {
	kubeconfig string
	namespace  string
	duration   time.Duration
	objects    int
	workers    int
	progress   time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", "", "watch the cluster of this kubeconfig instead of the embedded fake API server")
	flag.StringVar(&cfg.namespace, "namespace", "", "namespace to watch (default: all)")
	flag.DurationVar(&cfg.duration, "duration", 8*time.Second, "how long to run; on the fake server, how long to churn before the final convergence check (0: until Ctrl-C)")
	flag.IntVar(&cfg.objects, "objects", 500, "pods the fake server starts with and churns around")
	flag.IntVar(&cfg.workers, "workers", 2, "workqueue workers")
	flag.DurationVar(&cfg.progress, "progress", 2*time.Second, "interval between progress lines")
	// klog registers a dozen flags; only its verbosity is worth a line in --help.
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	flag.Var(klogFlags.Lookup("v").Value, "v", "log verbosity (klog): 4 shows every list and watch")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "podwatch:", err)
		os.Exit(1)
	}
}

// run wires the source, the informer and the controller, runs them until the
// duration ends or ctx is cancelled, and prints the summary.
func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.objects < 1 || cfg.workers < 1 || cfg.progress <= 0 || cfg.duration < 0 {
		return errors.New("--objects and --workers must be at least 1, --progress positive and --duration not negative (0: until Ctrl-C)")
	}
	out = &lockedWriter{w: out} // progress and churn report from different goroutines
	src, err := newSource(cfg)
	if err != nil {
		return err
	}
	lw := &countingListerWatcher{inner: src.lw}
	lags := newLagTracker()
	// The informer comes from the factory, as in most controllers; the one
	// openinformer option set here feeds the lag report.
	factory := informers.NewSharedInformerFactoryWithOptions(podClient(ctx, lw), 0,
		informers.WithInformerOptions(func(_ runtime.Object, opts *cache.SharedIndexInformerOptions) {
			opts.HandlerMetricsProvider = lags
		}))
	informer := factory.Core().V1().Pods().Informer()
	ctrl := newController(informer.GetIndexer())
	if _, err := informer.AddEventHandler(ctrl.handler()); err != nil {
		return err
	}
	audit := newAuditHandler()
	if _, err := informer.AddEventHandler(audit); err != nil {
		return err
	}

	// On the fake server the churn decides when the run ends; on a real
	// cluster the duration does.
	runCtx, cancel := context.WithCancel(ctx)
	if src.churn == nil && cfg.duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, cfg.duration)
	}
	defer cancel()
	start := time.Now()
	factory.StartWithContext(runCtx)
	defer func() { cancel(); factory.Shutdown() }()

	fmt.Fprintf(out, "podwatch: watching pods on %s\n", src.description)
	if !waitForSync(runCtx, cfg.progress, out, start, informer, lw) {
		return fmt.Errorf("cache did not sync before the run ended (last error: %v)", lw.lastError())
	}
	fmt.Fprintf(out, "%6.1fs synced: %d pods in cache\n", time.Since(start).Seconds(), len(informer.GetIndexer().ListKeys()))

	r := &runner{cfg: cfg, out: out, start: start, informer: informer, ctrl: ctrl, audit: audit, lags: lags, lw: lw, src: src}
	return r.run(runCtx)
}

// source is where pods come from: the embedded fake API server with its churn,
// or a real cluster.
type source struct {
	lw          cache.ListerWatcher
	description string
	churn       *churner
}

func newSource(cfg config) (*source, error) {
	if cfg.kubeconfig == "" {
		ch, err := newChurner(cfg.objects)
		if err != nil {
			return nil, err
		}
		return &source{lw: ch.server, description: fmt.Sprintf("the embedded fake API server (%d pods, churning)", cfg.objects), churn: ch}, nil
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("building client: %w", err)
	}
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "pods", cfg.namespace, fields.Everything())
	return &source{lw: cache.ToListWatcherWithWatchListSemantics(lw, client), description: restConfig.Host}, nil
}

// lockedWriter serialises writes, so lines from concurrent reporters never
// interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
