package prometheus

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	cache "github.com/openinformer/cache"
)

// Metrics implements cache.HandlerMetricsProvider, cache.InformerMetricsProvider (with its
// InformerStateMetricsProvider and ObjectErrorMetricsProvider extensions) and
// cache.MetricsProvider on a Prometheus registry. Safe for concurrent use.
type Metrics struct {
	reg prometheus.Registerer
	now func() time.Time // the clock of the last-event age

	mu   sync.Mutex
	vecs map[string]prometheus.Collector // by fully-qualified metric name
}

var (
	_ cache.HandlerMetricsProvider  = (*Metrics)(nil)
	_ cache.InformerMetricsProvider = (*Metrics)(nil)
	_ cache.MetricsProvider         = (*Metrics)(nil)

	_ cache.InformerStateMetricsProvider = (*Metrics)(nil)
)

// New returns Metrics that register their collectors on reg as informers ask for them. Two
// Metrics on one registry share the collectors.
func New(reg prometheus.Registerer) *Metrics {
	return &Metrics{reg: reg, now: time.Now, vecs: map[string]prometheus.Collector{}}
}

// Install makes m the process-wide provider of the handler, informer and reflector metrics.
// Call it before building informers; as with client-go, only the first provider installed for
// each kind takes effect.
func (m *Metrics) Install() {
	cache.SetHandlerMetricsProvider(m)
	cache.SetInformerMetricsProvider(m)
	cache.SetReflectorMetricsProvider(m)
}

// Labels of the informer and handler metrics; component-base names the informer "name".
var (
	informerLabels = []string{"name", "group", "version", "resource"}
	handlerLabels  = append(append([]string{}, informerLabels...), "handler")
	reflectorLabel = []string{"name"}
)

func informerLabelValues(id cache.InformerNameAndResource) []string {
	gvr := id.GroupVersionResource()
	return []string{id.Name(), gvr.Group, gvr.Version, gvr.Resource}
}

func handlerLabelValues(id cache.InformerNameAndResource, handler string) []string {
	return append(informerLabelValues(id), handler)
}

// collector returns the collector registered as name, building and registering it on
// first use. A collector someone else registered under the same description is reused.
func collector[C prometheus.Collector](m *Metrics, name string, build func() C) C {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.vecs[name]; ok {
		return c.(C)
	}
	c := build()
	if err := m.reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			panic(err)
		}
		c = already.ExistingCollector.(C)
	}
	m.vecs[name] = c
	return c
}

func (m *Metrics) gauge(opts prometheus.GaugeOpts, labels []string, values ...string) prometheus.Gauge {
	name := prometheus.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name)
	return collector(m, name, func() *prometheus.GaugeVec { return prometheus.NewGaugeVec(opts, labels) }).WithLabelValues(values...)
}

func (m *Metrics) counter(opts prometheus.CounterOpts, labels []string, values ...string) prometheus.Counter {
	name := prometheus.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name)
	return collector(m, name, func() *prometheus.CounterVec { return prometheus.NewCounterVec(opts, labels) }).WithLabelValues(values...)
}

func (m *Metrics) histogram(opts prometheus.HistogramOpts, labels []string, values ...string) prometheus.Observer {
	name := prometheus.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name)
	return collector(m, name, func() *prometheus.HistogramVec { return prometheus.NewHistogramVec(opts, labels) }).WithLabelValues(values...)
}

func (m *Metrics) summary(opts prometheus.SummaryOpts, labels []string, values ...string) prometheus.Observer {
	name := prometheus.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name)
	return collector(m, name, func() *prometheus.SummaryVec { return prometheus.NewSummaryVec(opts, labels) }).WithLabelValues(values...)
}
