package cache

// InformerStateMetricsProvider is an optional extension of an
// InformerMetricsProvider (asked for by type assertion, like
// ObjectErrorMetricsProvider). It is handed every informer with a reserved
// identity once, when the informer is built, and reads the informer's state
// when its metrics are collected: the informer does no work for these
// metrics between collections.
type InformerStateMetricsProvider interface {
	ObserveInformerState(id InformerNameAndResource, state InformerState)
}

// InformerState is what a metrics provider may read of an informer, from any
// goroutine, at any time.
type InformerState interface {
	// HasSynced reports whether the informer's cache holds its initial list.
	HasSynced() bool
	// IsStopped reports whether the informer has stopped.
	IsStopped() bool
	// CachedObjects is how many objects the informer's cache holds.
	CachedObjects() int
}

// observeInformerState hands s to the metrics provider when its identity is
// reserved and the provider reads informer state.
func observeInformerState(s *sharedIndexInformer) {
	if !s.identifier.Reserved() {
		return
	}
	if p, ok := metricsProviderOr(s.metricsProvider).(InformerStateMetricsProvider); ok {
		p.ObserveInformerState(s.identifier, informerState{s})
	}
}

// informerState is a sharedIndexInformer as InformerState.
type informerState struct{ s *sharedIndexInformer }

func (st informerState) HasSynced() bool { return st.s.HasSynced() }
func (st informerState) IsStopped() bool { return st.s.IsStopped() }

// CachedObjects counts without listing.
func (st informerState) CachedObjects() int { return st.s.indexer.storage.Len() }
