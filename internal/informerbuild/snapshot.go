package informerbuild

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"time"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/sharding"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
)

// Snapshots are a factory's warm-restart settings (docs/RESTART.md): every
// informer it builds saves its cache under Dir, in a file of its own.
type Snapshots struct {
	// Dir holds the files; it must exist.
	Dir string
	// Version, Interval and CatchUpTimeout are each informer's
	// SnapshotOptions fields of the same names.
	Version        string
	Interval       time.Duration
	CatchUpTimeout time.Duration
}

// For returns the snapshot options of the informer of gvr with scope and
// shard (the shard selector's string, "" for the whole collection).
func (s *Snapshots) For(gvr schema.GroupVersionResource, scope cache.SnapshotScope, shard string) *cache.SnapshotOptions {
	return &cache.SnapshotOptions{
		Path:           filepath.Join(s.Dir, SnapshotFileName(gvr, scope, shard, s.Version)),
		Scope:          &scope,
		Resource:       gvr,
		Version:        s.Version,
		Interval:       s.Interval,
		CatchUpTimeout: s.CatchUpTimeout,
	}
}

// SnapshotFileName is `<group>_<version>_<resource>-<hash>.snap`, the group
// "core" for the legacy group's "", the hash over the resource, scope,
// shard and version: an informer whose selector, shard or Version changed
// finds no file, rather than another informer's one, and two informers of
// one factory never share a file.
func SnapshotFileName(gvr schema.GroupVersionResource, scope cache.SnapshotScope, shard, version string) string {
	h := sha256.New()
	for _, field := range []string{gvr.Group, gvr.Version, gvr.Resource, scope.Namespace, scope.LabelSelector, scope.FieldSelector, shard, version} {
		// Each field length-prefixed, so no two tuples hash the same bytes.
		h.Write(binary.AppendUvarint(nil, uint64(len(field))))
		h.Write([]byte(field))
	}
	group := gvr.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s_%s_%s-%s.snap", group, gvr.Version, gvr.Resource, hex.EncodeToString(h.Sum(nil)[:8]))
}

// SnapshotScope is the scope of an informer listing namespace with
// requests tweaked by tweak: its selectors as the server reads them,
// written canonical (labels.Selector.String()), so that equivalent
// spellings name one scope. A selector that does not parse is kept as
// written; the informer's requests fail on it anyway.
func SnapshotScope(namespace string, tweak func(*metav1.ListOptions)) cache.SnapshotScope {
	var opts metav1.ListOptions
	if tweak != nil {
		tweak(&opts)
	}
	scope := cache.SnapshotScope{Namespace: namespace, LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector}
	if sel, err := labels.Parse(opts.LabelSelector); err == nil {
		scope.LabelSelector = sel.String()
	}
	if sel, err := fields.ParseSelector(opts.FieldSelector); err == nil {
		scope.FieldSelector = sel.String()
	}
	return scope
}

// Apply sets opts.Snapshot for the informer of gvr with scope, restricted
// to shard (nil: all) and opts.ShardSelector; a nil s leaves it unset.
func (s *Snapshots) Apply(opts *cache.SharedIndexInformerOptions, gvr schema.GroupVersionResource, scope cache.SnapshotScope, shard *sharding.Shard) {
	if s != nil {
		opts.Snapshot = s.For(gvr, scope, shardName(shard, opts.ShardSelector))
	}
}

// shardName is the string an informer's shard is known by in its snapshot
// file's name: its shard's selector and its shard selector, both filtering
// its requests. A malformed shard adds nothing: its informer never syncs,
// so never saves.
func shardName(shard *sharding.Shard, selector apisharding.Selector) string {
	var name string
	if shard != nil {
		if sel, err := shard.Selector(); err == nil {
			name = sel.String()
		}
	}
	if selector != nil && !selector.Empty() {
		name += ";" + selector.String()
	}
	return name
}
