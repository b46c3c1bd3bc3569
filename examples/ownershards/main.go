// Command ownershards shows how to shard a controller whose objects own others, so that each
// replica sees an owner together with everything it owns: ReplicaSets and their Pods here.
//
// Sharding both by UID (KEP-5866's default field) splits them: a ReplicaSet lands on one
// replica, each of its Pods on whichever replica its own UID hashes to. Hashing a Pod by its
// controller's UID instead puts it next to its ReplicaSet. The API server cannot select on an
// owner reference, so the Pods are filtered on arrival here (the ReplicaSets still use the
// server-side selector); docs/SHARDING.md compares this with sharding by namespace and with an
// owner label that the server can select on.
//
// It runs on the embedded fake API server and prints, per replica and per strategy, how many
// ReplicaSets it holds and how many of them it sees with all their Pods:
//
//	go run ./examples/ownershards --replicas 3 --replicasets 200
//
// With --spread it prints instead how KEP-5866's hash spreads realistic namespace names and
// UIDs over even shard ranges (the table in docs/SHARDING.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/sharding"
)

type config struct {
	replicas    int
	replicaSets int
	podsPerSet  int
}

func main() {
	var cfg config
	spread := flag.Bool("spread", false, "print how the shard hash spreads namespace names and UIDs, and exit")
	flag.IntVar(&cfg.replicas, "replicas", 3, "sharded replicas")
	flag.IntVar(&cfg.replicaSets, "replicasets", 200, "ReplicaSets on the fake server")
	flag.IntVar(&cfg.podsPerSet, "pods", 3, "Pods per ReplicaSet")
	flag.Parse()
	var err error
	if *spread {
		err = printSpread(os.Stdout, []int{2, 4, 8})
	} else {
		err = run(context.Background(), cfg, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// strategy builds one replica's Pod ListerWatcher.
type strategy struct {
	name string
	pods func(pods cache.ListerWatcher, shard sharding.Shard) (cache.ListerWatcher, error)
}

var strategies = []strategy{
	{"pods by their own UID", func(pods cache.ListerWatcher, shard sharding.Shard) (cache.ListerWatcher, error) {
		return sharding.NewListWatch(pods, shard)
	}},
	{"pods by their controller's UID", func(pods cache.ListerWatcher, shard sharding.Shard) (cache.ListerWatcher, error) {
		return newOwnerListWatch(pods, shard)
	}},
}

// replicaView is what one replica's caches hold.
type replicaView struct {
	replicaSets int // ReplicaSets in its shard
	complete    int // of those, how many it sees with all their Pods
	pods        int // Pods it caches
}

// run seeds the fake server and reports every strategy's views.
func run(ctx context.Context, cfg config, out io.Writer) error {
	rsServer, podServer, err := seed(cfg)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "strategy\treplica\treplicasets\twith all their pods\tpods cached")
	for _, s := range strategies {
		views, err := viewsOf(ctx, cfg, s, rsServer, podServer)
		if err != nil {
			return err
		}
		total := replicaView{}
		for i, v := range views {
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\n", s.name, i, v.replicaSets, v.complete, v.pods)
			total.replicaSets += v.replicaSets
			total.complete += v.complete
			total.pods += v.pods
		}
		fmt.Fprintf(w, "%s\tall\t%d\t%d\t%d\n", s.name, total.replicaSets, total.complete, total.pods)
	}
	return w.Flush()
}

// seed makes ReplicaSets in a few namespaces, each with its Pods controlled by it.
func seed(cfg config) (*fake.Server, *fake.Server, error) {
	rsServer := fake.MustNew(fake.Options{Object: &appsv1.ReplicaSet{}})
	podServer := fake.MustNew(fake.Options{Object: &corev1.Pod{}})
	for i := range cfg.replicaSets {
		ns := fmt.Sprintf("team-%c", 'a'+i%4)
		obj, err := rsServer.Create(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i)}})
		if err != nil {
			return nil, nil, err
		}
		rs := obj.(*appsv1.ReplicaSet)
		owner := *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
		for j := range cfg.podsPerSet {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", rs.Name, j),
				OwnerReferences: []metav1.OwnerReference{owner}}}
			if _, err := podServer.Create(pod); err != nil {
				return nil, nil, err
			}
		}
	}
	return rsServer, podServer, nil
}

// viewsOf syncs every replica's two informers for one strategy and reads their caches.
func viewsOf(ctx context.Context, cfg config, s strategy, rsServer, podServer *fake.Server) ([]replicaView, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var views []replicaView
	var runs []func()
	defer func() {
		cancel()
		for _, wait := range runs {
			wait()
		}
	}()
	for i := range cfg.replicas {
		shard := sharding.Shard{Index: i, Count: cfg.replicas}
		rsLW, err := sharding.NewListWatch(rsServer, shard)
		if err != nil {
			return nil, err
		}
		podLW, err := s.pods(podServer, shard)
		if err != nil {
			return nil, err
		}
		rsInformer := cache.NewSharedIndexInformer(rsLW, &appsv1.ReplicaSet{}, 0, cache.Indexers{})
		podInformer := cache.NewSharedIndexInformer(podLW, &corev1.Pod{}, 0, cache.Indexers{byController: controllerUID})
		runs = append(runs, start(ctx, rsInformer), start(ctx, podInformer))
		if !cache.WaitForCacheSync(ctx.Done(), rsInformer.HasSynced, podInformer.HasSynced) {
			return nil, ctx.Err()
		}
		view, err := read(rsInformer.GetStore(), podInformer.GetIndexer(), cfg.podsPerSet)
		if err != nil {
			return nil, err
		}
		views = append(views, view)
	}
	return views, nil
}

// start runs an informer until ctx ends; the returned function waits for it to return.
func start(ctx context.Context, informer cache.SharedIndexInformer) (wait func()) {
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	return func() { <-done }
}

// byController indexes Pods by their controller's UID, as a ReplicaSet controller looks them up.
const byController = "controller"

func controllerUID(obj interface{}) ([]string, error) {
	if ref := metav1.GetControllerOfNoCopy(obj.(metav1.Object)); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// read is one replica's reconcile of every ReplicaSet it holds: does it see all its Pods?
func read(replicaSets cache.Store, pods cache.Indexer, podsPerSet int) (replicaView, error) {
	v := replicaView{pods: len(pods.ListKeys())}
	for _, obj := range replicaSets.List() {
		owned, err := pods.ByIndex(byController, string(obj.(runtime.Object).(metav1.Object).GetUID()))
		if err != nil {
			return v, err
		}
		v.replicaSets++
		if len(owned) == podsPerSet {
			v.complete++
		}
	}
	return v, nil
}
