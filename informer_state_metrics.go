package cache

import "fmt"

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

// NewDerivedInformerName reserves a name for informers whose builder was given none but
// knows what they are, such as a factory without WithInformerName, so that they publish
// metrics: base, or base-2, base-3, ... for the first one not in use. It returns nil (no
// name, no metrics) while no process-wide InformerMetricsProvider is installed: nothing would
// be published, and a reserved identity costs a clock read per queue pop.
func NewDerivedInformerName(base string) *InformerName {
	if _, off := metricsProviderOr(nil).(noopInformerMetricsProvider); off {
		return nil
	}
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		if n, err := NewInformerName(name); err == nil {
			return n
		}
	}
}
