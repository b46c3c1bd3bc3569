// Command shardedpods is a manager meant to run as several replicas (a
// Deployment) that split the cluster's pods between them through Leases:
// each replica caches and reconciles only its share, and the shares move
// as replicas come and go. Its controller names its handler, so the
// handler lag metrics have a series of its own. See the README's "Sharded
// managers" for the RBAC and the handover.
package main

import (
	"context"
	"os"

	oicache "github.com/openinformer/cache"
	crcache "github.com/openinformer/cache/controllerruntime"
	"github.com/openinformer/cache/sharding"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

func main() {
	ctrl.SetLogger(zap.New())
	log := ctrl.Log.WithName("setup")
	if err := run(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "shardedpods")
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg := ctrl.GetConfigOrDie()
	leases, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: crcache.New(crcache.Options{ByObject: map[client.Object]crcache.InformerOptions{
			&corev1.Pod{}: {
				Compact: &oicache.CompactOptions{},
				Membership: &sharding.MembershipOptions{
					Client:    leases,
					Namespace: os.Getenv("POD_NAMESPACE"), // the Leases live beside the replicas
					Group:     "shardedpods",
					Identity:  os.Getenv("POD_NAME"),
					Field:     sharding.ByNamespace, // a namespace's pods stay together
				},
			},
		}}),
	})
	if err != nil {
		return err
	}
	pods := source.Kind(crcache.ForController(mgr.GetCache(), "podlogger"), &corev1.Pod{},
		&handler.TypedEnqueueRequestForObject[*corev1.Pod]{})
	err = ctrl.NewControllerManagedBy(mgr).
		Named("podlogger").
		WatchesRawSource(pods).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var pod corev1.Pod
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, &pod); err != nil {
				// NotFound: deleted, or handed over to another replica.
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			logf.FromContext(ctx).Info("pod", "phase", pod.Status.Phase)
			return reconcile.Result{}, nil
		}))
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}
