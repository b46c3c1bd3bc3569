package crcache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	cache "github.com/openinformer/cache"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// representation is how an informer's objects are decoded: controller-
// runtime keeps a separate informer per GVK for each.
type representation int

const (
	repTyped representation = iota
	repUnstructured
	repMetadata
)

// String names the representation in snapshot files and metrics.
func (r representation) String() string {
	switch r {
	case repUnstructured:
		return "unstructured"
	case repMetadata:
		return "metadata"
	}
	return "typed"
}

// representationOf is obj's representation, as controller-runtime sorts
// objects into its informer maps.
func representationOf(obj runtime.Object) representation {
	switch obj.(type) {
	case runtime.Unstructured:
		return repUnstructured
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return repMetadata
	}
	return repTyped
}

// snapshotVersion is the SnapshotOptions.Version of an informer: every
// setting that changes what its cache holds, besides the server-side
// scope, so that a snapshot made under other settings is never resumed.
func snapshotVersion(s listWatchScope, o InformerOptions) (string, error) {
	parts := []string{"crcache/v1", s.rep.String(), s.gvk.String(), "user=" + o.SnapshotVersion}
	if o.StripManagedFields {
		parts = append(parts, "strip-managed-fields")
	}
	if o.Shard != nil {
		sel, err := o.Shard.Selector()
		if err != nil {
			return "", err
		}
		parts = append(parts, "shard="+sel.String())
	}
	return strings.Join(parts, " "), nil
}

// snapshotOptions returns the snapshot settings of an informer, or nil
// when its type has snapshots off. The file name is readable (kind,
// representation, namespace) and ends in a digest of the whole scope and
// version, so that two informers of one cache never share a file.
func snapshotOptions(dir string, s listWatchScope, o InformerOptions, metrics cache.SnapshotMetrics) (*cache.SnapshotOptions, error) {
	if !o.Snapshot {
		return nil, nil
	}
	if dir == "" {
		return nil, fmt.Errorf("snapshots of %s are on but Options.SnapshotDir is empty", s.gvk)
	}
	version, err := snapshotVersion(s, o)
	if err != nil {
		return nil, err
	}
	scope := &cache.SnapshotScope{Namespace: s.namespace, LabelSelector: s.label, FieldSelector: s.field}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%q\x00%q\x00%q", version, s.mapping.Resource, scope.Namespace, scope.LabelSelector, scope.FieldSelector))
	ns := s.namespace
	if ns == "" {
		ns = "all"
	}
	name := fmt.Sprintf("%s.%s.%s.%s.%s.snap", fileSafe(s.mapping.Resource.Resource), fileSafe(s.gvk.GroupVersion().String()),
		s.rep, fileSafe(ns), hex.EncodeToString(sum[:8]))
	return &cache.SnapshotOptions{
		Path:     filepath.Join(dir, name),
		Scope:    scope,
		Resource: s.mapping.Resource,
		Version:  version,
		Interval: o.SnapshotInterval,
		Metrics:  metrics,
	}, nil
}

// fileSafe keeps letters, digits, dots and dashes; anything else becomes
// '_' (the digest keeps names unique).
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, s)
}
