// Package sharding splits a collection between replicas: each replica's informer lists,
// watches, caches and handles only its slice of the objects, using the API server's sharded
// list and watch (KEP-5866, feature gate ShardedListAndWatch) and filtering on the client when
// the server does not.
//
// A Shard names a slice of the 64-bit FNV-1a hash space of object.metadata.uid (ByUID) or
// object.metadata.namespace (ByNamespace); its Selector is apimachinery's sharding.Selector,
// the one the API server and client-go's NewShardedListWatch take. NewListWatch wraps a
// ListerWatcher so that it serves only the shard's objects whatever the server does, and says
// through Mode who filters. FromOrdinal and Shard.BindFlags give a static shard from a
// StatefulSet ordinal or from flags.
//
// Membership hands out shards dynamically, rebalancing through coordination.k8s.io Leases as
// replicas join and leave; MembershipInformer runs an informer that follows it, switching
// shards make before break while its handlers and indexer carry over.
//
// The root package's NewShardedListWatch and SharedIndexInformerOptions.ShardSelector are
// client-go's (v0.38): a selector attached to the requests and a client-side filter when the
// server leaves the list unsharded. This package adds what client-go does not: a server that
// rejects the selector, the filtering mode, shards that narrow without a new list, and
// rebalancing.
//
// Locks: a MembershipInformer handler's switch lock (held while that handler runs) is taken
// before the MembershipInformer's own, never the other way round; both are outside every lock
// of the root package's informers.
package sharding
