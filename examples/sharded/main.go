// Command sharded runs several sharded informers in one process, as replicas of a controller
// would run in several pods, and shows each replica's share of the objects and events.
//
// By default it needs no cluster: it starts the embedded fake API server with --objects pods,
// runs --replicas informers on it, each with its own shard, writes --writes changes, and checks
// that the replicas together hold every pod exactly once. --server chooses how the fake treats
// the shard selector: "applied" (like the API server's ShardedListAndWatch feature gate on),
// "ignored" (gate off) or "rejected"; the replicas fall back to filtering on the client in the
// last two. With --kubeconfig it shards the pods of a real cluster for --duration instead.
//
//	go run ./examples/sharded --replicas 4 --objects 2000
//	go run ./examples/sharded --server ignored
//	go run ./examples/sharded --kubeconfig ~/.kube/config --duration 30s
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
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/sharding"
)

type config struct {
	kubeconfig string
	namespace  string
	duration   time.Duration
	replicas   int
	objects    int
	writes     int
	server     string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", "", "shard the pods of this kubeconfig's cluster instead of the embedded fake API server")
	flag.StringVar(&cfg.namespace, "namespace", "", "namespace to watch on a real cluster (default: all)")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long to watch a real cluster")
	flag.IntVar(&cfg.replicas, "replicas", 4, "sharded informers to run")
	flag.IntVar(&cfg.objects, "objects", 2000, "pods the fake server starts with")
	flag.IntVar(&cfg.writes, "writes", 1000, "creates, updates and deletes made on the fake server")
	flag.StringVar(&cfg.server, "server", "applied", "how the fake treats shard selectors: applied, ignored or rejected")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sharded:", err)
		os.Exit(1)
	}
}

// replica is one sharded informer and what its handler saw.
type replica struct {
	lw       *sharding.ListWatch
	informer cache.SharedIndexInformer
	events   atomic.Int64
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.replicas < 1 || cfg.objects < 0 || cfg.writes < 0 {
		return errors.New("--replicas must be at least 1, --objects and --writes not negative")
	}
	lw, srv, err := source(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	replicas, wait, err := startReplicas(ctx, lw, cfg.replicas)
	defer func() {
		cancel()
		wait()
	}()
	if err != nil {
		return err
	}
	synced := make([]cache.DoneChecker, len(replicas))
	for i, r := range replicas {
		synced[i] = r.informer.HasSyncedChecker()
	}
	if !cache.WaitFor(ctx, "", synced...) {
		return errors.New("interrupted before the informers synced")
	}
	if srv == nil {
		select {
		case <-ctx.Done():
		case <-time.After(cfg.duration):
		}
		report(out, replicas, 0)
		return nil
	}
	if err := churn(srv, cfg.writes); err != nil {
		return err
	}
	total, err := awaitPartition(ctx, srv, replicas)
	report(out, replicas, total)
	return err
}

// source is the fake server (also returned) or a real cluster's pods.
func source(cfg config) (cache.ListerWatcher, *fake.Server, error) {
	if cfg.kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
		if err != nil {
			return nil, nil, err
		}
		client, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, nil, err
		}
		return cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "pods", cfg.namespace, fields.Everything()), nil, nil
	}
	support := map[string]fake.ShardSelectorSupport{
		"applied": fake.ShardSelectorsApplied, "ignored": fake.ShardSelectorsIgnored, "rejected": fake.ShardSelectorsRejected,
	}
	s, ok := support[cfg.server]
	if !ok {
		return nil, nil, fmt.Errorf("--server %q: want applied, ignored or rejected", cfg.server)
	}
	objs := make([]runtime.Object, cfg.objects)
	for i := range objs {
		objs[i] = pod(i)
	}
	srv, err := fake.New(fake.Options{Object: &corev1.Pod{}, Objects: objs, ShardSelectors: s})
	return srv, srv, err
}

func pod(i int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("pod-%05d", i)}}
}

// startReplicas runs one informer per shard; wait blocks until they have stopped.
func startReplicas(ctx context.Context, lw cache.ListerWatcher, n int) ([]*replica, func(), error) {
	var wg sync.WaitGroup
	replicas := make([]*replica, n)
	for i := range replicas {
		slw, err := sharding.NewListWatch(lw, sharding.Shard{Index: i, Count: n})
		if err != nil {
			return nil, wg.Wait, err
		}
		r := &replica{lw: slw, informer: cache.NewSharedIndexInformer(slw, &corev1.Pod{}, 0, cache.Indexers{})}
		count := func(any) { r.events.Add(1) }
		if _, err := r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: count, UpdateFunc: func(_, obj any) { count(obj) }, DeleteFunc: count,
		}); err != nil {
			return nil, wg.Wait, err
		}
		replicas[i] = r
		wg.Go(func() { r.informer.RunWithContext(ctx) })
	}
	return replicas, wg.Wait, nil
}

// churn creates, updates and deletes pods, a third of the writes each.
func churn(srv *fake.Server, writes int) error {
	for i := 0; i < writes; i++ {
		var err error
		switch i % 3 {
		case 0:
			_, err = srv.Create(pod(1_000_000 + i))
		case 1:
			p := pod(1_000_000 + i - 1)
			p.Labels = map[string]string{"updated": "true"}
			_, err = srv.Update(p)
		default:
			_, err = srv.Delete(pod(1_000_000+i-2).Namespace, pod(1_000_000+i-2).Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// awaitPartition waits until every object on the server is held by exactly one replica, at
// its current version, and returns the object count.
func awaitPartition(ctx context.Context, srv *fake.Server, replicas []*replica) (int, error) {
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		want := map[string]string{}
		for _, obj := range srv.Objects() {
			p := obj.(*corev1.Pod)
			want[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		problem := partitionProblem(want, replicas)
		if problem == "" {
			return len(want), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-deadline:
			return 0, errors.New("replicas did not converge: " + problem)
		case <-tick.C:
		}
	}
}

func partitionProblem(want map[string]string, replicas []*replica) string {
	held := 0
	for i, r := range replicas {
		for _, obj := range r.informer.GetStore().List() {
			p := obj.(*corev1.Pod)
			if want[p.Namespace+"/"+p.Name] != p.ResourceVersion {
				return fmt.Sprintf("replica %d holds %s/%s at %s", i, p.Namespace, p.Name, p.ResourceVersion)
			}
			held++
		}
	}
	if held != len(want) {
		return fmt.Sprintf("replicas hold %d objects, the server %d", held, len(want))
	}
	return ""
}

func report(out io.Writer, replicas []*replica, total int) {
	fmt.Fprintf(out, "%-8s %-7s %8s %8s  %s\n", "replica", "filter", "objects", "events", "shard selector")
	for i, r := range replicas {
		fmt.Fprintf(out, "%-8d %-7s %8d %8d  %s\n", i, r.lw.Mode(), len(r.informer.GetStore().List()), r.events.Load(), r.lw.Selector().String())
	}
	if total > 0 {
		fmt.Fprintf(out, "every one of the server's %d pods is held by exactly one replica\n", total)
	}
}
