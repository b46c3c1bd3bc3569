// Command crbench measures an operator watching Pods and Secrets on a real
// kube-apiserver (started by envtest from -apiserver and -etcd), once with
// controller-runtime v0.25.3's cache and DefaultTransform:
// TransformStripManagedFields() (what users run today) and once with
// crcache (compact storage, managedFields stripped), each in its own
// process, side by side in one run.
//
// Per implementation it reports the time to sync, the peak heap from start
// to synced, the steady heap after sync (after GC), Get p99 over cached
// pods and List(MatchingLabels) p50 selecting 1% of the pods.
//
// Usage:
//
//	go run . -apiserver PATH -etcd PATH [-pods 2000] [-secrets 1000]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	oicache "github.com/openinformer/cache"
	crcache "github.com/openinformer/cache/controllerruntime"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// groups is how many label groups the pods are spread over: a
// MatchingLabels on one selects 1%.
const groups = 100

func main() {
	role := flag.String("role", "parent", "parent (servers, load, children) or child (one operator)")
	impl := flag.String("impl", "", "child: controller-runtime or crcache")
	kubeconfig := flag.String("child-kubeconfig", "", "child: the servers' kubeconfig")
	apiserver := flag.String("apiserver", "", "kube-apiserver binary")
	etcd := flag.String("etcd", "", "etcd binary")
	pods := flag.Int("pods", 2000, "pods to create")
	secrets := flag.Int("secrets", 1000, "secrets to create")
	flag.Parse()
	var err error
	if *role == "child" {
		err = child(*impl, *kubeconfig, *pods, *secrets)
	} else {
		err = parent(*apiserver, *etcd, *pods, *secrets)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crbench:", err)
		os.Exit(1)
	}
}

// result is one child's measurements.
type result struct {
	Impl             string
	SyncSeconds      float64
	PeakHeapMB       float64
	SteadyHeapMB     float64
	GetP99Micros     float64
	ListP50Micros    float64
	ListMatched      int
	CachedPods       int
	ReconciledEvents int64
}

func parent(apiserver, etcd string, pods, secrets int) error {
	env := &envtest.Environment{}
	if err := os.Setenv("TEST_ASSET_KUBE_APISERVER", apiserver); err != nil {
		return err
	}
	if err := os.Setenv("TEST_ASSET_ETCD", etcd); err != nil {
		return err
	}
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
	dir, err := os.MkdirTemp("", "crbench")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	start := time.Now()
	if err := load(cl, pods, secrets); err != nil {
		return err
	}
	fmt.Printf("created %d pods and %d secrets in %s\n", pods, secrets, time.Since(start).Round(time.Second))
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var results []result
	for _, impl := range []string{"controller-runtime", "crcache"} {
		out, err := exec.Command(self, "-role=child", "-impl="+impl, "-child-kubeconfig="+kcPath, fmt.Sprint("-pods=", pods), fmt.Sprint("-secrets=", secrets)).Output()
		if err != nil {
			return fmt.Errorf("%s: %w", impl, err)
		}
		var r result
		if err := json.Unmarshal(out, &r); err != nil {
			return fmt.Errorf("%s: %w: %s", impl, err, out)
		}
		results = append(results, r)
	}
	report(results)
	return nil
}

func report(rs []result) {
	uptime, _ := exec.Command("uptime").Output()
	fmt.Printf("load: %s", uptime)
	fmt.Printf("%-20s %8s %10s %10s %10s %10s %8s %8s\n", "impl", "sync s", "peak MB", "steady MB", "Get p99µs", "List p50µs", "matched", "pods")
	for _, r := range rs {
		fmt.Printf("%-20s %8.2f %10.1f %10.1f %10.1f %10.1f %8d %8d\n", r.Impl, r.SyncSeconds, r.PeakHeapMB, r.SteadyHeapMB, r.GetP99Micros, r.ListP50Micros, r.ListMatched, r.CachedPods)
	}
	if len(rs) == 2 {
		a, b := rs[0], rs[1]
		fmt.Printf("crcache / controller-runtime: sync %.2fx, peak heap %.2fx, steady heap %.2fx, Get p99 %.2fx, List(MatchingLabels 1%%) p50 %.2fx\n",
			b.SyncSeconds/a.SyncSeconds, b.PeakHeapMB/a.PeakHeapMB, b.SteadyHeapMB/a.SteadyHeapMB, b.GetP99Micros/a.GetP99Micros, b.ListP50Micros/a.ListP50Micros)
	}
}

// load creates the pods and secrets with a few concurrent writers.
func load(cl client.Client, pods, secrets int) error {
	ctx := context.Background()
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}); err != nil {
		return err
	}
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < pods+secrets; i += writers {
				var obj client.Object = benchPod(i)
				if i >= pods {
					obj = benchSecret(i - pods)
				}
				if err := cl.Create(ctx, obj); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// benchPod is a pod of a typical size: labels, annotations, an owner,
// two containers with env, ports, probes, resources and volumes.
func benchPod(i int) *corev1.Pod {
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "registry.example.com/team/app:v1.2.3",
			Env:          []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "REGION", Value: "eu-west-1"}, {Name: "LOG_LEVEL", Value: "info"}},
			Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intOrName("http")}}},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "bench", Name: fmt.Sprintf("pod-%06d", i),
			Labels:      map[string]string{"app": "bench", "group": fmt.Sprint(i % groups), "pod-template-hash": "5d8f9c7b6d", "tier": "backend"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{container("app"), container("sidecar")},
			Volumes:    []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}},
			NodeName:   fmt.Sprintf("node-%03d", i%50),
		},
	}
}

func benchSecret(i int) *corev1.Secret {
	data := make([]byte, 1024)
	for j := range data {
		data[j] = byte('a' + (i+j)%26)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("secret-%06d", i), Labels: map[string]string{"app": "bench"}},
		Data:       map[string][]byte{"token": data},
	}
}

// child runs one operator: a manager with a no-op controller for Pods
// and one for Secrets, and measures it.
func child(impl, kubeconfig string, pods, secrets int) error {
	raw, err := os.ReadFile(kubeconfig)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, -1
	opts := ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}}
	switch impl {
	case "controller-runtime":
		opts.Cache = cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	case "crcache":
		opts.NewCache = crcache.New(crcache.Options{Defaults: crcache.InformerOptions{Compact: &oicache.CompactOptions{}, StripManagedFields: true}})
	default:
		return fmt.Errorf("unknown -impl %q", impl)
	}
	var peak atomic.Uint64
	stopSampling := sampleHeap(&peak)
	start := time.Now()
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	var events atomic.Int64
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.Secret{}} {
		r := reconcilerFunc(func(context.Context, ctrl.Request) (ctrl.Result, error) { events.Add(1); return ctrl.Result{}, nil })
		if err := ctrl.NewControllerManagedBy(mgr).For(obj).Complete(r); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync")
	}
	// The controllers' informers exist once their sources started. Their
	// keys are counted, not their objects listed: a List of every pod
	// through the reader would copy (or decode) the whole cache and make
	// the peak the benchmark's own.
	cached, err := cachedPods(ctx, mgr.GetCache(), pods)
	if err != nil {
		return err
	}
	// GetInformer blocks until the informer synced.
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.Secret{}); err != nil {
		return err
	}
	r := result{Impl: impl, SyncSeconds: time.Since(start).Seconds(), CachedPods: cached}
	stopSampling()
	// Steady state: every object reconciled once, so that no initial
	// notification is still queued for a handler.
	for events.Load() < int64(pods+secrets) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	r.PeakHeapMB = float64(peak.Load()) / (1 << 20)
	r.SteadyHeapMB = steadyHeapMB()
	r.GetP99Micros = getP99(ctx, mgr.GetClient(), pods)
	r.ListP50Micros, r.ListMatched = listP50(ctx, mgr.GetClient())
	r.ReconciledEvents = events.Load()
	return json.NewEncoder(os.Stdout).Encode(r)
}

// cachedPods waits until the pod informer holds want keys and returns how
// many it holds.
func cachedPods(ctx context.Context, c cache.Cache, want int) (int, error) {
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return 0, err
	}
	store := inf.(interface{ GetStore() toolscache.Store }).GetStore()
	for n := len(store.ListKeys()); ; n = len(store.ListKeys()) {
		if n >= want || ctx.Err() != nil {
			return n, ctx.Err()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type reconcilerFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcilerFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}

// sampleHeap records the largest live heap every 5 ms until stopped.
func sampleHeap(peak *atomic.Uint64) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-stopped }
}

func steadyHeapMB() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// getP99 times 2000 cached Gets of pods spread over the collection.
func getP99(ctx context.Context, cl client.Client, pods int) float64 {
	const n = 2000
	d := make([]time.Duration, 0, n)
	for i := range n {
		var p corev1.Pod
		start := time.Now()
		_ = cl.Get(ctx, client.ObjectKey{Namespace: "bench", Name: fmt.Sprintf("pod-%06d", (i*7919)%pods)}, &p)
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	return float64(d[n*99/100].Microseconds())
}

// listP50 times 50 label-selected Lists, each matching 1% of the pods.
func listP50(ctx context.Context, cl client.Client) (float64, int) {
	const n = 50
	d := make([]time.Duration, 0, n)
	matched := 0
	for i := range n {
		var l corev1.PodList
		start := time.Now()
		_ = cl.List(ctx, &l, client.InNamespace("bench"), client.MatchingLabels{"group": fmt.Sprint(i % groups)})
		d = append(d, time.Since(start))
		matched = len(l.Items)
	}
	slices.Sort(d)
	return float64(d[n/2].Microseconds()), matched
}

func intOrName(name string) intstr.IntOrString { return intstr.FromString(name) }
