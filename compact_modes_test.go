package cache

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// storageMode is one way a store holds its objects. The store and informer
// suites run in every mode, so that compact storage is held to the same
// scripts and differential tests as the default.
type storageMode struct {
	name    string
	compact *CompactOptions
}

var storageModes = []storageMode{
	{name: "decoded"},
	{name: "compact", compact: &CompactOptions{HotObjects: DefaultHotObjects}},
}

// forEachStorageMode runs body as a subtest per storage mode.
func forEachStorageMode(t *testing.T, body func(t *testing.T, mode storageMode)) {
	t.Helper()
	for _, mode := range storageModes {
		t.Run(mode.name, func(t *testing.T) { body(t, mode) })
	}
}

// newIndexer is NewIndexer in this mode.
func (m storageMode) newIndexer(keyFunc KeyFunc, indexers Indexers) Indexer {
	if m.compact == nil {
		return NewIndexer(keyFunc, indexers)
	}
	return NewCompactIndexer(keyFunc, indexers, *m.compact)
}

// newInformer is NewSharedIndexInformer in this mode.
func (m storageMode) newInformer(lw ListerWatcher, exampleObject runtime.Object, resync time.Duration, indexers Indexers) SharedIndexInformer {
	return NewSharedIndexInformerWithOptions(lw, exampleObject, SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers, Compact: m.compact})
}
