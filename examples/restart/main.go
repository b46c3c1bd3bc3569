// Command restart shows a warm restart (docs/RESTART.md) on the embedded
// fake API server: an openinformer informer syncs N pods, stops and saves
// its snapshot; some pods change while it is down; then client-go's
// informer syncs cold and ours restarts warm from the snapshot, side by
// side. It prints, for each start, the requests by kind, the time to sync,
// the bytes read, the CPU, the bytes allocated and the heap, and checks
// that the warm start's handler saw exactly the initial list client-go's
// did.
//
// Every object crosses a simulated wire (encoded as protobuf as the API
// server sends it, then decoded), so each informer pays a real client's
// decoding and the bytes it would read are counted.
//
//	go run ./examples/restart
//	go run ./examples/restart -pods 100000 -realistic -rounds 3
//	go run ./examples/restart -compact-history   # the window is gone: fallback
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/klog/v2"
)

type config struct {
	pods, changes, rounds int
	realistic             bool
	compactHistory        bool
	dir                   string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.pods, "pods", 2000, "pods on the fake API server")
	flag.IntVar(&cfg.changes, "changes", 0, "pods changed while the informer is down: half updated, a quarter deleted, a quarter created (0: 1% of -pods, at least 4)")
	flag.IntVar(&cfg.rounds, "rounds", 1, "restarts to measure, each a cold start, changes while down, client-go's cold start and a warm start")
	flag.BoolVar(&cfg.realistic, "realistic", false, "realistic pods (about 10 KB each, with managedFields) instead of small ones")
	flag.BoolVar(&cfg.compactHistory, "compact-history", false, "empty the server's watch window while the informer is down, so the restart falls back to a full sync (410 Gone)")
	flag.StringVar(&cfg.dir, "dir", "", "directory of the snapshot file (default: a new temporary directory, removed at exit)")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	flag.Var(klogFlags.Lookup("v").Value, "v", "log verbosity (klog)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "restart:", err)
		os.Exit(1)
	}
}

// run plays cfg's rounds and prints each.
func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.pods < 1 || cfg.rounds < 1 || cfg.changes < 0 {
		return errors.New("-pods and -rounds must be at least 1, -changes not negative")
	}
	if cfg.changes == 0 {
		cfg.changes = max(cfg.pods/100, 4)
	}
	if cfg.dir == "" {
		dir, err := os.MkdirTemp("", "restart-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.dir = dir
	}
	c, err := newCluster(cfg)
	if err != nil {
		return err
	}
	path := filepath.Join(cfg.dir, "core_v1_pods.snap")
	fmt.Fprintf(out, "restart: %d %s pods on the embedded fake API server, %d changed while the informer is down; snapshot %s\n",
		cfg.pods, podStyle(cfg.realistic), cfg.changes, path)
	fmt.Fprintln(out, "the process holds the fake server too: the heap figures include what the server allocates to serve the start (docs/RESTART.md)")
	for i := range cfg.rounds {
		starts, err := c.round(ctx, path, cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\nround %d\n", i+1)
		if err := report(out, starts); err != nil {
			return err
		}
	}
	return nil
}

func podStyle(realistic bool) string {
	if realistic {
		return "realistic"
	}
	return "small"
}
