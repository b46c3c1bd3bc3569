package cache

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openinformer/cache/internal/objmeta"
)

// listenerTestDescribe prints key@rv, or tombstone(key@rv) for a tombstone.
func listenerTestDescribe(obj interface{}) string {
	if t, ok := obj.(DeletedFinalStateUnknown); ok {
		if t.Obj == nil {
			return "tombstone(" + t.Key + ")"
		}
		return "tombstone(" + listenerTestDescribe(t.Obj) + ")"
	}
	m, err := objmeta.Accessor(obj)
	if err != nil {
		return fmt.Sprint(obj)
	}
	return m.GetNamespace() + "/" + m.GetName() + "@" + m.GetResourceVersion()
}

// listenerTestMetrics captures handler lag metrics.
type listenerTestMetrics struct {
	pending, age atomic.Value
	collapses    atomic.Int32
}

type listenerTestGauge struct{ v *atomic.Value }

func (g listenerTestGauge) Set(f float64) { g.v.Store(f) }
func (g listenerTestGauge) Inc()          {}
func (g listenerTestGauge) Dec()          {}

type listenerTestCounter struct{ n *atomic.Int32 }

func (c listenerTestCounter) Inc() { c.n.Add(1) }

func (m *listenerTestMetrics) NewPendingNotificationsMetric(InformerNameAndResource, string) GaugeMetric {
	return listenerTestGauge{&m.pending}
}
func (m *listenerTestMetrics) NewOldestPendingAgeMetric(InformerNameAndResource, string) GaugeMetric {
	return listenerTestGauge{&m.age}
}
func (m *listenerTestMetrics) NewBacklogCollapsesMetric(InformerNameAndResource, string) CounterMetric {
	return listenerTestCounter{&m.collapses}
}

func TestSetHandlerMetricsProviderIsTheDefault(t *testing.T) {
	SetHandlerMetricsProvider(&listenerTestMetrics{})
	installed := handlerMetrics.provider.(*listenerTestMetrics)
	SetHandlerMetricsProvider(&listenerTestMetrics{}) // ignored: the first call wins
	assert.Same(t, installed, handlerMetrics.provider)
	m := listenerMetrics(nil, InformerNameAndResource{}, "test")
	assert.True(t, m.Enabled)
	before := installed.collapses.Load()
	m.Collapses.Inc()
	assert.Equal(t, before+1, installed.collapses.Load())
}

type clientcacheForeignHandle struct{}

func (clientcacheForeignHandle) HasSynced() bool               { return false }
func (clientcacheForeignHandle) HasSyncedChecker() DoneChecker { return nil }
