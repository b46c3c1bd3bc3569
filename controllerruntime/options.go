package crcache

import (
	"errors"
	"time"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/sharding"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options are openinformer's settings for a controller-runtime cache. The
// zero value gives controller-runtime's own behaviour, with openinformer's
// informers underneath.
type Options struct {
	// Defaults apply to every informer whose type ByObject does not name.
	Defaults InformerOptions
	// ByObject replaces Defaults, as a whole, for the informers of one
	// type (its typed, unstructured and metadata-only forms alike).
	ByObject map[client.Object]InformerOptions
	// SnapshotDir is the directory of the warm-restart snapshots: one file
	// per informer, named after its scope (see InformerOptions.Snapshot).
	// It must exist and survive the restarts that should be warm.
	SnapshotDir string
	// InformerMetrics receives each informer's store and reflector
	// metrics; nil records none.
	InformerMetrics cache.InformerMetricsProvider
	// HandlerMetrics receives each event handler's lag metrics, one series
	// per handler registration; nil records none.
	HandlerMetrics cache.HandlerMetricsProvider
	// SnapshotMetrics receives snapshot and restart measurements; nil
	// records none.
	SnapshotMetrics cache.SnapshotMetrics
	// Name prefixes the informers' names in metrics; "" means
	// "controller-runtime".
	Name string
}

// InformerOptions are the openinformer settings of one informer.
type InformerOptions struct {
	// Compact keeps cached objects encoded (cache.CompactOptions); nil
	// keeps them decoded, as controller-runtime does.
	Compact *cache.CompactOptions
	// StripManagedFields drops metadata.managedFields before caching.
	StripManagedFields bool
	// MaxPendingNotificationsPerHandler bounds each handler's backlog
	// (cache.SharedIndexInformerOptions); 0 leaves it unbounded.
	MaxPendingNotificationsPerHandler int
	// SlowHandlerThreshold logs a handler whose oldest notification is
	// older than this; 0 logs nothing.
	SlowHandlerThreshold time.Duration
	// Snapshot turns warm restarts on; Options.SnapshotDir must be set.
	Snapshot bool
	// SnapshotVersion names the transform and index functions the cached
	// objects were made with: bump it when they change, so that no
	// snapshot of the old ones is resumed.
	SnapshotVersion string
	// SnapshotInterval is the time between snapshots while running
	// (cache.SnapshotOptions.Interval).
	SnapshotInterval time.Duration
	// Shard restricts the informer to one fixed shard of its objects;
	// nil caches them all. A read of another shard's object answers as
	// for an object that does not exist.
	Shard *sharding.Shard
	// Membership shards the informer through coordination.k8s.io Leases
	// instead: the replicas sharing Group split the type's objects evenly
	// and rebalance as replicas come and go (sharding.MembershipInformer).
	// Client, Namespace, Group and Identity (this replica's unique name,
	// its pod name say) are required and OnChange must stay nil. Each
	// informer takes part under a group of its own, derived from Group,
	// so that several types, representations or namespaces never share a
	// Lease: "<Group>-<resource>[.<API group>]", then "-metadata" or
	// "-unstructured" for those representations and "-<namespace>" for one
	// namespace's informer, shortened with a digest past a label value's
	// 63 characters. Not with Shard, nor with Snapshot: a Lease shard
	// changes while the informer runs, and a snapshot of one range must
	// never be resumed for another.
	Membership *sharding.MembershipOptions
}

// validate refuses combinations the informer cannot honour, so that New
// fails rather than the first read of the type.
func (o InformerOptions) validate() error {
	m := o.Membership
	switch {
	case m == nil:
		return nil
	case o.Shard != nil:
		return errors.New("with both Shard and Membership set: a shard is either fixed or handed out through Leases, not both")
	case o.Snapshot:
		return errors.New("with both Snapshot and Membership set: a Lease shard changes at run time, so no snapshot could say which range it holds")
	case m.OnChange != nil:
		return errors.New("with Membership.OnChange set: leave it nil, the informer sets it")
	}
	return m.Validate()
}
