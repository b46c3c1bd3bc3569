package cache

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// reportedErrors collects what goes through utilruntime's error handlers,
// each as "msg: err [key/value pairs]".
type reportedErrors struct {
	mu   sync.Mutex
	msgs []string
}

// captureReportedErrors replaces utilruntime's error handlers for the rest
// of the test (which must not run in parallel with others).
func captureReportedErrors(t *testing.T) *reportedErrors {
	r := &reportedErrors{}
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, kv ...interface{}) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.msgs = append(r.msgs, fmt.Sprintf("%s: %v %v", msg, err, kv))
	}}
	t.Cleanup(func() { utilruntime.ErrorHandlers = saved })
	return r
}

// take returns the reports so far, sorted, and forgets them.
func (r *reportedErrors) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.msgs
	r.msgs = nil
	sort.Strings(out)
	return out
}

func sortedStrings(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

// objectErrorCounter counts Inc calls.
type objectErrorCounter struct {
	mu sync.Mutex
	n  int
}

func (c *objectErrorCounter) Inc() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
}

func (c *objectErrorCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// objectErrorProvider hands out one object-error counter for every
// identity, as a vector metric keyed by identity would.
type objectErrorProvider struct {
	noopInformerMetricsProvider
	errors objectErrorCounter
}

func (p *objectErrorProvider) NewObjectErrorMetric(InformerNameAndResource) CounterMetric {
	return &p.errors
}
