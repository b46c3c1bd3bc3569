package informerbuild

import (
	"path/filepath"
	"regexp"
	"testing"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/sharding"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
)

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// The file is named after the resource, the legacy group as "core", with a
// 16-hex-digit hash.
func TestSnapshotFileNameNamesTheResource(t *testing.T) {
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	for gvr, want := range map[schema.GroupVersionResource]string{
		pods:        `^core_v1_pods-[0-9a-f]{16}\.snap$`,
		deployments: `^apps_v1_deployments-[0-9a-f]{16}\.snap$`,
	} {
		if got := SnapshotFileName(gvr, cache.SnapshotScope{}, "", ""); !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("SnapshotFileName(%v) = %q, want %s", gvr, got, want)
		}
	}
}

// Whatever an informer's snapshot depends on changes its file's name, so a
// changed selector finds no file rather than a wrong one; the same inputs
// always name the same file.
func TestSnapshotFileNameChangesWithEveryInput(t *testing.T) {
	base := SnapshotFileName(pods, cache.SnapshotScope{}, "", "")
	if again := SnapshotFileName(pods, cache.SnapshotScope{}, "", ""); again != base {
		t.Fatalf("the same inputs named %q and %q", base, again)
	}
	seen := map[string]string{base: "base"}
	for name, got := range map[string]string{
		"group":     SnapshotFileName(schema.GroupVersionResource{Group: "x", Version: "v1", Resource: "pods"}, cache.SnapshotScope{}, "", ""),
		"namespace": SnapshotFileName(pods, cache.SnapshotScope{Namespace: "ns"}, "", ""),
		"labels":    SnapshotFileName(pods, cache.SnapshotScope{LabelSelector: "a=b"}, "", ""),
		"fields":    SnapshotFileName(pods, cache.SnapshotScope{FieldSelector: "a=b"}, "", ""),
		"shard":     SnapshotFileName(pods, cache.SnapshotScope{}, "a=b", ""),
		"version":   SnapshotFileName(pods, cache.SnapshotScope{}, "", "a=b"),
		// Length prefixes keep a value from sliding into its neighbour:
		// "n"+"s" is namespace's "ns"+"".
		"boundary": SnapshotFileName(pods, cache.SnapshotScope{Namespace: "n", LabelSelector: "s"}, "", ""),
	} {
		if prev, ok := seen[got]; ok {
			t.Errorf("%s names the same file as %s: %q", name, prev, got)
		}
		seen[got] = name
	}
}

// Equivalent selectors are one scope; the namespace is kept.
func TestSnapshotScopeIsCanonical(t *testing.T) {
	got := SnapshotScope("ns", func(o *metav1.ListOptions) {
		o.LabelSelector = "b=2,a=1"
		o.FieldSelector = "spec.nodeName=n1"
	})
	want := cache.SnapshotScope{Namespace: "ns", LabelSelector: "a=1,b=2", FieldSelector: "spec.nodeName=n1"}
	if got != want {
		t.Errorf("SnapshotScope = %+v, want %+v", got, want)
	}
	if got := SnapshotScope("", nil); got != (cache.SnapshotScope{}) {
		t.Errorf("SnapshotScope without a tweak = %+v, want the zero scope", got)
	}
	if got := SnapshotScope("", func(o *metav1.ListOptions) { o.LabelSelector = "a in (" }); got.LabelSelector != "a in (" {
		t.Errorf("a malformed selector became %q, want it kept as written", got.LabelSelector)
	}
}

// Apply fills every field from the settings and the informer's identity,
// the shard from both the factory's shard and its shard selector, and
// leaves the options alone when snapshots are off.
func TestApplySetsTheInformersSnapshot(t *testing.T) {
	var off *Snapshots
	var opts cache.SharedIndexInformerOptions
	off.Apply(&opts, pods, cache.SnapshotScope{}, nil)
	if opts.Snapshot != nil {
		t.Fatalf("nil Snapshots set %+v", opts.Snapshot)
	}

	s := &Snapshots{Dir: "/snaps", Version: "v2", Interval: 7, CatchUpTimeout: 9}
	scope := cache.SnapshotScope{Namespace: "ns"}
	s.Apply(&opts, pods, scope, nil)
	want := cache.SnapshotOptions{Path: filepath.Join("/snaps", SnapshotFileName(pods, scope, "", "v2")), Scope: &scope, Version: "v2", Interval: 7, CatchUpTimeout: 9}
	if got := *opts.Snapshot; got.Path != want.Path || *got.Scope != scope || got.Version != want.Version || got.Interval != want.Interval || got.CatchUpTimeout != want.CatchUpTimeout {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
	}

	unsharded := opts.Snapshot.Path
	s.Apply(&opts, pods, scope, &sharding.Shard{Index: 0, Count: 2})
	byShard := opts.Snapshot.Path
	opts.ShardSelector = apisharding.NewSelector(apisharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000"})
	s.Apply(&opts, pods, scope, &sharding.Shard{Index: 0, Count: 2})
	byBoth := opts.Snapshot.Path
	if unsharded == byShard || byShard == byBoth || unsharded == byBoth {
		t.Errorf("shards share files: whole %q, shard %q, shard and selector %q", unsharded, byShard, byBoth)
	}
}
