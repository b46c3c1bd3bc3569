package cache

import (
	"reflect"

	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/store"
)

// The store engine (items, indexes, the write pipeline, the storage forms)
// is internal/store; this file is client-go's ThreadSafeStore surface over
// it.

// ThreadSafeStoreOption configures a store built by NewThreadSafeStore.
type ThreadSafeStoreOption = func(*threadSafeMap)

// threadSafeMap is what a ThreadSafeStoreOption configures: the Config of
// the store.Map that NewThreadSafeStore returns.
type threadSafeMap struct {
	cfg store.Config
}

// WithThreadSafeStoreMetrics publishes the store's resource version under
// identifier, through provider or, when it is nil, the process-wide one.
func WithThreadSafeStoreMetrics(identifier InformerNameAndResource, provider InformerMetricsProvider) ThreadSafeStoreOption {
	return func(s *threadSafeMap) {
		s.cfg.RVMetric, s.cfg.ObjectErrors = storeMetrics(identifier, provider)
	}
}

// NewThreadSafeStore returns a ThreadSafeStore indexed by indexers. The
// indices argument exists for compatibility: indexes are always derived
// from the stored items, so any prebuilt content is ignored.
func NewThreadSafeStore(indexers Indexers, indices Indices, opts ...ThreadSafeStoreOption) ThreadSafeStore {
	return newThreadSafeMap(indexers, opts...)
}

func newThreadSafeMap(indexers Indexers, opts ...ThreadSafeStoreOption) *store.Map {
	s := &threadSafeMap{cfg: storeConfig(form.Plain{})}
	for _, opt := range opts {
		opt(s)
	}
	return store.New(indexers, s.cfg)
}

// storeConfig is the Config of a store holding objects in form f, without
// metrics.
func storeConfig(f form.Form) store.Config {
	return store.Config{Form: f, IsNamespaceIndex: isMetaNamespaceIndexFunc}
}

// storeMetrics are the store's metrics for identifier: nil for the
// resource version when it is not published.
func storeMetrics(identifier InformerNameAndResource, provider InformerMetricsProvider) (GaugeMetric, CounterMetric) {
	rv := newStoreRVMetric(identifier, provider)
	if metricOff(rv) {
		rv = nil
	}
	return rv, newObjectErrorMetric(identifier, provider)
}

// isMetaNamespaceIndexFunc recognises ours and client-go's: Indexers built
// with client-go's import, as controller-runtime builds them, get the
// store's fast path for namespace indexes.
func isMetaNamespaceIndexFunc(fn IndexFunc) bool {
	p := reflect.ValueOf(fn).Pointer()
	return p == reflect.ValueOf(MetaNamespaceIndexFunc).Pointer() || p == clientGoMetaNamespaceIndexFunc
}
