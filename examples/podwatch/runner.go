package main

import (
	"context"
	"fmt"
	"io"
	"math"
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

// run reports progress until the run ends: on the fake server when the churn
// is over and the cache has been checked against the server, on a real
// cluster when ctx ends (the duration or Ctrl-C).
func (r *runner) run(ctx context.Context) error {
	workCtx, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopWork()
	wg.Go(func() { r.ctrl.run(workCtx, r.cfg.workers) })
	var churnDone chan struct{} // stays nil, never ready, without churn
	if r.src.churn != nil {
		churnDone = make(chan struct{})
		wg.Go(func() { defer close(churnDone); r.src.churn.run(workCtx, r.churnPlan(), r.out, r.start) })
	}

	ticker := time.NewTicker(r.cfg.progress)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			r.summary("")
			return nil
		case <-churnDone:
			// The informer is still running here, so a relist in flight
			// can finish before the comparison gives up.
			converged, err := r.src.churn.compare(ctx, r.informer.GetIndexer())
			r.summary(converged)
			return err
		case <-ticker.C:
			r.progress()
		}
	}
}

// churnPlan spreads the fake server's churn over the run: steady writes, a
// dropped watch at a quarter, a compaction that forces a 410 relist at half
// time. Without a duration the faults come in the first minute and the churn
// goes on until Ctrl-C.
func (r *runner) churnPlan() churnPlan {
	if r.cfg.duration <= 0 {
		return churnPlan{dropWatchAt: 15 * time.Second, compactAt: 30 * time.Second, stopAt: math.MaxInt64}
	}
	d := r.cfg.duration
	return churnPlan{dropWatchAt: d / 4, compactAt: d / 2, stopAt: d}
}

func (r *runner) progress() {
	c := r.audit.counts()
	fmt.Fprintf(r.out, "%6.1fs adds=%d updates=%d deletes=%d reconciled=%d cache=%d queue=%d syncs=%d watches=%d %s\n",
		time.Since(r.start).Seconds(), c.adds, c.updates, c.deletes, r.ctrl.reconciled(),
		len(r.informer.GetIndexer().ListKeys()), r.ctrl.queue.Len(), r.lw.syncs(), r.lw.watches(), r.lags.brief())
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
	fmt.Fprintf(w, "  watches         %d started (%d full-state watch-list streams; the rest resume after a dropped or expired watch)\n",
		r.lw.watches(), r.lw.streams())
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
