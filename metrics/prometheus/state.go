package prometheus

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/compactstats"
)

// The informer state gauges, read from each informer when the registry is scraped.
var (
	syncedDesc = prometheus.NewDesc("openinformer_informer_synced",
		"1 when the informer's cache holds its initial list, else 0.", informerLabels, nil)
	cachedObjectsDesc = prometheus.NewDesc("openinformer_informer_cached_objects",
		"Objects in the informer's cache.", informerLabels, nil)
	lastEventAgeDesc = prometheus.NewDesc("openinformer_informer_last_event_age_seconds",
		"Seconds since the informer's cache last applied a watch event, a bookmark or a list. "+
			"It keeps rising while a watch is stalled; absent until the first.", informerLabels, nil)
)

// The compact storage series, read with the state gauges; only informers with compact
// storage have them.
var (
	tierObjectsDesc = prometheus.NewDesc("openinformer_storage_objects",
		"Objects in the informer's compact storage by tier (plain or cold), as of the cold tier's last sweep.",
		append(informerLabels[:len(informerLabels):len(informerLabels)], "tier"), nil)
	tierBytesDesc = prometheus.NewDesc("openinformer_storage_bytes",
		"Encoded bytes in the informer's compact storage by tier (plain or cold), as of the cold tier's last sweep.",
		append(informerLabels[:len(informerLabels):len(informerLabels)], "tier"), nil)
	tierMovesDesc = prometheus.NewDesc("openinformer_storage_tier_moves_total",
		"Objects the cold tier moved, by direction (cooled, warmed) or failed.",
		append(informerLabels[:len(informerLabels):len(informerLabels)], "move"), nil)
	readsDesc = prometheus.NewDesc("openinformer_storage_reads_total",
		"Reads of compact storage by how they were answered: hot (the hot cache), plain or cold (a decode of that tier).",
		append(informerLabels[:len(informerLabels):len(informerLabels)], "answer"), nil)
	cooledBytesDesc = prometheus.NewDesc("openinformer_storage_cooled_bytes_total",
		"Encoded bytes of the objects the cold tier compressed, before (plain) and after (cold): cold over plain is the dictionary's compression ratio.",
		append(informerLabels[:len(informerLabels):len(informerLabels)], "tier"), nil)
	dictionaryBytesDesc = prometheus.NewDesc("openinformer_storage_dictionary_bytes",
		"Size of the cold tier's compression dictionaries.", informerLabels, nil)
	sweepSecondsDesc = prometheus.NewDesc("openinformer_storage_sweep_seconds_total",
		"Time the cold tier's background sweeps took.", informerLabels, nil)
	budgetBytesDesc = prometheus.NewDesc("openinformer_storage_budget_bytes",
		"The informer's CompactOptions.MemoryBudget; only informers with one have the budget series.", informerLabels, nil)
	budgetedBytesDesc = prometheus.NewDesc("openinformer_storage_budgeted_bytes",
		"What the memory budget counts: every tier's encoded bytes, the store's cost per object and the hot cache's decoded objects, as estimated.",
		informerLabels, nil)
	overBudgetDesc = prometheus.NewDesc("openinformer_storage_over_budget",
		"1 while the objects do not fit in the memory budget with every object that compresses compressed (every object is kept), else 0.",
		informerLabels, nil)
	hotLimitDesc = prometheus.NewDesc("openinformer_storage_hot_objects_limit",
		"The hot cache's size as the memory budget sets it.", informerLabels, nil)
)

// stateCollectorName is the key of the state collector among m's collectors.
const stateCollectorName = "openinformer_informer_state"

// ObserveInformerState implements cache.InformerStateMetricsProvider: the informer id names is
// read at each scrape for openinformer_informer_synced, openinformer_informer_cached_objects and
// openinformer_informer_last_event_age_seconds. An informer that stopped, or whose identity was
// released, is dropped at the next scrape; a later informer with the same identity replaces it.
func (m *Metrics) ObserveInformerState(id cache.InformerNameAndResource, state cache.InformerState) {
	m.states().observe(id, state)
}

func (m *Metrics) states() *stateCollector {
	return collector(m, stateCollectorName, func() *stateCollector {
		return &stateCollector{now: m.now, informers: map[string]observedInformer{}, lastEvents: map[string]*atomic.Int64{}}
	})
}

// stateCollector reads the observed informers at each scrape. Keys are the joined label
// values, so there is one series per informer identity whatever happens to the informers.
type stateCollector struct {
	now        func() time.Time
	mu         sync.Mutex
	informers  map[string]observedInformer
	lastEvents map[string]*atomic.Int64 // unix nanoseconds; 0 before the first
}

type observedInformer struct {
	id     cache.InformerNameAndResource
	state  cache.InformerState
	values []string
}

func stateKey(values []string) string { return strings.Join(values, "\x00") }

func (c *stateCollector) observe(id cache.InformerNameAndResource, state cache.InformerState) {
	values := informerLabelValues(id)
	k := stateKey(values)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.informers[k] = observedInformer{id: id, state: state, values: values}
	c.lastEventLocked(k).Store(0)
}

// lastEvent returns the time the identity's cache last applied something, shared by the
// collector and the store's resource-version gauge that sets it.
func (c *stateCollector) lastEvent(id cache.InformerNameAndResource) *atomic.Int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastEventLocked(stateKey(informerLabelValues(id)))
}

func (c *stateCollector) lastEventLocked(k string) *atomic.Int64 {
	at, ok := c.lastEvents[k]
	if !ok {
		at = &atomic.Int64{}
		c.lastEvents[k] = at
	}
	return at
}

// Describe sends the three gauges' descriptions.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- syncedDesc
	ch <- cachedObjectsDesc
	ch <- lastEventAgeDesc
	for _, d := range []*prometheus.Desc{tierObjectsDesc, tierBytesDesc, tierMovesDesc, cooledBytesDesc, readsDesc, dictionaryBytesDesc, sweepSecondsDesc,
		budgetBytesDesc, budgetedBytesDesc, overBudgetDesc, hotLimitDesc} {
		ch <- d
	}
}

// Collect reads every live observed informer.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, inf := range c.informers {
		if !inf.id.Reserved() || inf.state.IsStopped() {
			delete(c.informers, k)
			continue
		}
		synced := 0.0
		if inf.state.HasSynced() {
			synced = 1
		}
		ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, synced, inf.values...)
		ch <- prometheus.MustNewConstMetric(cachedObjectsDesc, prometheus.GaugeValue, float64(inf.state.CachedObjects()), inf.values...)
		if at := c.lastEvents[k].Load(); at != 0 {
			ch <- prometheus.MustNewConstMetric(lastEventAgeDesc, prometheus.GaugeValue, now.Sub(time.Unix(0, at)).Seconds(), inf.values...)
		}
		collectStorage(ch, inf.state.Storage(), inf.values)
	}
}

// collectStorage sends an informer's compact storage series; none when it keeps objects
// decoded (nothing read or stored encoded).
func collectStorage(ch chan<- prometheus.Metric, s compactstats.Stats, values []string) {
	if s == (compactstats.Stats{}) {
		return
	}
	with := func(v string) []string { return append(values[:len(values):len(values)], v) }
	gauge := func(d *prometheus.Desc, v float64, labels []string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels []string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(tierObjectsDesc, float64(s.PlainObjects), with("plain"))
	gauge(tierObjectsDesc, float64(s.ColdObjects), with("cold"))
	gauge(tierBytesDesc, float64(s.PlainBytes), with("plain"))
	gauge(tierBytesDesc, float64(s.ColdBytes), with("cold"))
	counter(tierMovesDesc, float64(s.Cooled), with("cooled"))
	counter(tierMovesDesc, float64(s.Warmed), with("warmed"))
	counter(tierMovesDesc, float64(s.MoveFailures), with("failed"))
	counter(cooledBytesDesc, float64(s.CooledFromBytes), with("plain"))
	counter(cooledBytesDesc, float64(s.CooledToBytes), with("cold"))
	counter(readsDesc, float64(s.HotReads), with("hot"))
	counter(readsDesc, float64(s.PlainDecodes), with("plain"))
	counter(readsDesc, float64(s.ColdDecodes), with("cold"))
	gauge(dictionaryBytesDesc, float64(s.DictionaryBytes), values)
	counter(sweepSecondsDesc, s.SweepSeconds, values)
	if s.BudgetBytes > 0 {
		over := 0.0
		if s.OverBudget {
			over = 1
		}
		gauge(budgetBytesDesc, float64(s.BudgetBytes), values)
		gauge(budgetedBytesDesc, float64(s.BudgetedBytes), values)
		gauge(overBudgetDesc, over, values)
		gauge(hotLimitDesc, float64(s.HotLimit), values)
	}
}

// stampedGauge is the store's resource-version gauge, which the store sets each time it applies
// a watch event, a bookmark or a list: it also records when, for the last-event age.
type stampedGauge struct {
	prometheus.Gauge
	now func() time.Time
	at  *atomic.Int64
}

// Set sets the gauge and records the time.
func (g stampedGauge) Set(v float64) {
	g.Gauge.Set(v)
	g.at.Store(g.now().UnixNano())
}
