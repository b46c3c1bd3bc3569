package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	cache "github.com/openinformer/cache"
)

// runner owns one podwatch run after the initial sync: the controller's
// workers, the churn, the progress lines and the summary.
type runner struct {
	cfg      config
	out      io.Writer
	start    time.Time
	informer cache.SharedIndexInformer
	ctrl     *controller
	audit    *auditHandler
	lags     *lagTracker
	lw       *countingListerWatcher
	src      *source
}

func (r *runner) run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { r.ctrl.run(ctx, r.cfg.workers) })
	churnDone := make(chan struct{})
	if r.src.churn != nil {
		wg.Go(func() { defer close(churnDone); r.src.churn.run(ctx, r.churnPlan(), r.out, r.start) })
	}

	ticker := time.NewTicker(r.cfg.progress)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return r.finish(churnDone)
		case <-ticker.C:
			r.progress()
		}
	}
}

// churnPlan spreads the fake server's churn over the run: steady writes, a
// dropped watch at 30%, a compaction that forces a 410 relist at 55%, and a
// quiet last fifth in which the cache must converge.
func (r *runner) churnPlan() churnPlan {
	d := r.cfg.duration
	if d <= 0 {
		d = time.Minute
	}
	elapsed := time.Since(r.start)
	return churnPlan{dropWatchAt: d * 3 / 10, compactAt: d * 55 / 100, stopAt: d*8/10 - elapsed}
}

func (r *runner) progress() {
	c := r.audit.counts()
	fmt.Fprintf(r.out, "%6.1fs adds=%d updates=%d deletes=%d reconciled=%d cache=%d queue=%d lists=%d watches=%d %s\n",
		time.Since(r.start).Seconds(), c.adds, c.updates, c.deletes, r.ctrl.reconciled(),
		len(r.informer.GetIndexer().ListKeys()), r.ctrl.queue.Len(), r.lw.lists(), r.lw.watches(), r.lags.brief())
}

// finish waits for the churn to stop, checks convergence on the fake server
// and prints the summary. A cache that does not match the fake server's
// contents is an error: the demo doubles as an end-to-end check.
func (r *runner) finish(churnDone <-chan struct{}) error {
	converged := ""
	var err error
	if r.src.churn != nil {
		<-churnDone
		converged, err = r.src.churn.compare(r.informer.GetIndexer())
	}
	r.summary(converged)
	return err
}

func (r *runner) summary(converged string) {
	elapsed := time.Since(r.start)
	c := r.audit.counts()
	events := c.adds + c.updates + c.deletes
	w := r.out
	fmt.Fprintln(w, "summary")
	fmt.Fprintf(w, "  duration        %.1fs\n", elapsed.Seconds())
	fmt.Fprintf(w, "  events handled  %d (adds=%d updates=%d deletes=%d), %.0f events/s\n",
		events, c.adds, c.updates, c.deletes, float64(events)/elapsed.Seconds())
	fmt.Fprintf(w, "  out of order    %d per-key resource-version regressions\n", c.regressions)
	fmt.Fprintf(w, "  reconciled      %d keys by %d workers\n", r.ctrl.reconciled(), r.cfg.workers)
	fmt.Fprintf(w, "  cache           %d pods in %d namespaces\n", len(r.informer.GetIndexer().ListKeys()),
		len(r.informer.GetIndexer().ListIndexFuncValues(cache.NamespaceIndex)))
	fmt.Fprintf(w, "  relists         %d (lists=%d, watch-list streams=%d; the first sync is not a relist)\n",
		r.lw.syncs()-1, r.lw.lists(), r.lw.streams())
	fmt.Fprintf(w, "  watches         %d started\n", r.lw.watches())
	for _, line := range r.lags.report() {
		fmt.Fprintf(w, "  handler lag     %s\n", line)
	}
	if converged != "" {
		fmt.Fprintf(w, "  convergence     %s\n", converged)
	}
}

// sortedKeys returns m's keys in order, for stable output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
