// Package manager_test runs controller-runtime managers built with crcache
// on envtest (a real kube-apiserver and etcd): a controller reconciles
// every pod, and a restarted manager resumes its caches from their
// snapshots without listing pods again.
package manager_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	oicache "github.com/openinformer/cache"
	crcache "github.com/openinformer/cache/controllerruntime"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func TestManager(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "crcache manager suite")
}

var (
	env *envtest.Environment
	cfg *rest.Config
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	env = &envtest.Environment{}
	var err error
	cfg, err = env.Start()
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	Expect(env.Stop()).To(Succeed())
})

// podLists counts the full pod LIST requests a manager sends (a warm
// restart's one-object probe for the current resourceVersion is not one).
type podLists struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (p podLists) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods") && r.URL.Query().Get("watch") != "true" && r.URL.Query().Get("limit") != "1" {
		p.n.Add(1)
	}
	return p.rt.RoundTrip(r)
}

// seen records the pods a controller reconciled.
type seen struct {
	mu    sync.Mutex
	names map[string]bool
}

func (s *seen) Reconcile(_ context.Context, req ctrl.Request) (ctrl.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[req.String()] = true
	return ctrl.Result{}, nil
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.names)
}

// startManager runs a manager with crcache over dir and a pod controller;
// it returns the controller's record, the pod LIST counter and a stop.
func startManager(dir string) (*seen, *atomic.Int64, ctrl.Manager, func()) {
	lists := &atomic.Int64{}
	c := rest.CopyConfig(cfg)
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return podLists{rt: rt, n: lists} }
	mgr, err := ctrl.NewManager(c, ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"},
		NewCache: crcache.New(crcache.Options{SnapshotDir: dir, Defaults: crcache.InformerOptions{
			Compact: &oicache.CompactOptions{}, StripManagedFields: true, Snapshot: true, MaxPendingNotificationsPerHandler: 100}}),
	})
	Expect(err).NotTo(HaveOccurred())
	s := &seen{names: map[string]bool{}}
	Expect(ctrl.NewControllerManagedBy(mgr).For(&corev1.Pod{}).Named(fmt.Sprintf("pods-%d", counter.Add(1))).Complete(s)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return s, lists, mgr, func() {
		cancel()
		Expect(<-done).To(Succeed())
	}
}

var counter atomic.Int64

var _ = Describe("a manager with crcache", func() {
	It("reconciles every pod, and restarted resumes without listing pods", func(ctx SpecContext) {
		cl, err := client.New(cfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crcache-"}}
		Expect(cl.Create(ctx, ns)).To(Succeed())
		for i := range 3 {
			Expect(cl.Create(ctx, newPod(ns.Name, i))).To(Succeed())
		}
		dir := GinkgoT().TempDir()

		first, _, mgr, stop := startManager(dir)
		Eventually(first.count).Should(BeNumerically(">=", 3))
		var pods corev1.PodList
		Expect(mgr.GetClient().List(ctx, &pods, client.InNamespace(ns.Name), client.MatchingLabels{"app": "crcache"})).To(Succeed())
		Expect(pods.Items).To(HaveLen(3))
		stop()

		Expect(cl.Create(ctx, newPod(ns.Name, 3))).To(Succeed())
		second, lists, mgr, stop := startManager(dir)
		defer stop()
		Eventually(second.count).Should(BeNumerically(">=", 4))
		Eventually(func() int {
			var pods corev1.PodList
			Expect(mgr.GetClient().List(ctx, &pods, client.InNamespace(ns.Name), client.MatchingLabels{"app": "crcache"})).To(Succeed())
			return len(pods.Items)
		}).Should(Equal(4))
		Expect(lists.Load()).To(BeZero(), "pod LIST requests of the warm restart")
	})
})

func newPod(ns string, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"app": "crcache"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/x"}}},
	}
}
