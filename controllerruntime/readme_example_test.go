package crcache_test

import (
	cache "github.com/openinformer/cache"
	crcache "github.com/openinformer/cache/controllerruntime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// readmeManager is the README's first snippet, compiled.
func readmeManager(cfg *rest.Config) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: crcache.New(crcache.Options{
			SnapshotDir: "/snapshots",
			Defaults: crcache.InformerOptions{
				Compact: &cache.CompactOptions{}, StripManagedFields: true,
				Snapshot: true, MaxPendingNotificationsPerHandler: 10000,
			},
		}),
	})
	return mgr, err
}

var _ = readmeManager
