package main

import (
	"fmt"
	"math"
	"sync"

	cache "github.com/openinformer/cache"
)

// lagTracker is a cache.HandlerMetricsProvider that keeps, per handler, the
// current and the worst backlog and age of the oldest pending notification.
type lagTracker struct {
	mu       sync.Mutex
	handlers map[string]*handlerLag
}

type handlerLag struct {
	pending, maxPending     float64
	oldestAge, maxOldestAge float64
	collapses               float64
}

func newLagTracker() *lagTracker { return &lagTracker{handlers: map[string]*handlerLag{}} }

func (t *lagTracker) lag(handler string) *handlerLag {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.handlers[handler]
	if !ok {
		h = &handlerLag{}
		t.handlers[handler] = h
	}
	return h
}

// lagGauge records into one field of a handlerLag, and its maximum.
type lagGauge struct {
	t        *lagTracker
	cur, max *float64
}

func (g lagGauge) Set(v float64) {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	*g.cur = v
	*g.max = math.Max(*g.max, v)
}

func (g lagGauge) Inc() { g.Set(*g.cur + 1) }

// NewPendingNotificationsMetric implements cache.HandlerMetricsProvider.
func (t *lagTracker) NewPendingNotificationsMetric(_ cache.InformerNameAndResource, handler string) cache.GaugeMetric {
	h := t.lag(handler)
	return lagGauge{t: t, cur: &h.pending, max: &h.maxPending}
}

// NewOldestPendingAgeMetric implements cache.HandlerMetricsProvider.
func (t *lagTracker) NewOldestPendingAgeMetric(_ cache.InformerNameAndResource, handler string) cache.GaugeMetric {
	h := t.lag(handler)
	return lagGauge{t: t, cur: &h.oldestAge, max: &h.maxOldestAge}
}

// NewBacklogCollapsesMetric implements cache.HandlerMetricsProvider.
func (t *lagTracker) NewBacklogCollapsesMetric(_ cache.InformerNameAndResource, handler string) cache.CounterMetric {
	h := t.lag(handler)
	return lagGauge{t: t, cur: &h.collapses, max: &h.collapses}
}

// brief is the one-line lag figure for progress lines: the largest backlog now.
func (t *lagTracker) brief() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	worst := 0.0
	for _, h := range t.handlers {
		worst = math.Max(worst, h.pending)
	}
	return fmt.Sprintf("backlog=%.0f", worst)
}

// report is one line per handler for the summary.
func (t *lagTracker) report() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := make([]string, 0, len(t.handlers))
	for _, name := range sortedKeys(t.handlers) {
		h := t.handlers[name]
		lines = append(lines, fmt.Sprintf("%s: max pending %.0f, max oldest age %.0fms, collapses %.0f",
			name, h.maxPending, h.maxOldestAge*1000, h.collapses))
	}
	return lines
}
