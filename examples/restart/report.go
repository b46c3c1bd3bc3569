package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// report prints a round's starts side by side, the warm start's outcome,
// and whether its handler saw client-go's initial list.
func report(out io.Writer, starts []start) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, cell func(s start) string) {
		fmt.Fprint(tw, name, "\t")
		for _, s := range starts {
			fmt.Fprint(tw, cell(s), "\t")
		}
		fmt.Fprintln(tw)
	}
	row("", func(s start) string { return s.kind.String() })
	row("time to informer HasSynced", func(s start) string { return informerCell(s, func(c *cost) time.Duration { return c.sync }) })
	row("time to handler HasSynced", func(s start) string { return seconds(s.cost.sync) })
	row("full lists", func(s start) string { return fmt.Sprint(s.requests.FullLists) })
	row("list pages", func(s start) string { return fmt.Sprint(s.requests.ListPages) })
	row("probes (limit=1)", func(s start) string { return fmt.Sprint(s.requests.ProbeLists) })
	row("watch-lists, initial watches", func(s start) string { return fmt.Sprint(s.requests.InitialWatches) })
	row("resumed watches", func(s start) string { return fmt.Sprint(s.requests.ResumedWatches) })
	row("bytes read (protobuf)", func(s start) string { return size(uint64(s.read)) })
	row("CPU, process", func(s start) string { return seconds(s.cost.cpu) })
	row("  of which system", func(s start) string { return seconds(s.cost.sys) })
	row("  GC (runtime's estimate)", func(s start) string { return seconds(s.cost.gc) })
	row("CPU, informer (no server)", func(s start) string { return seconds(s.cost.client()) })
	row("  until informer HasSynced", func(s start) string { return informerCell(s, (*cost).client) })
	row("allocated", func(s start) string { return size(s.cost.allocated) })
	row("peak heap (above before)", func(s start) string { return size(s.cost.peak) })
	row("steady heap (after GC)", func(s start) string { return size(s.cost.steady) })
	row("initial list (adds)", func(s start) string { return fmt.Sprint(len(s.seen.initial)) })
	row("stop (what it wrote)", func(s start) string {
		switch {
		case s.kind == clientGoCold || s.kind == warmComponents:
			return "-"
		case s.wroteSnapshot:
			return seconds(s.save) + " (snapshot)"
		}
		return seconds(s.save) + " (journal)"
	})
	row("snapshot file", func(s start) string {
		if s.saved == 0 {
			return "-"
		}
		return size(uint64(s.saved))
	})
	row("components' snapshot written", func(s start) string {
		if s.componentsSave == 0 {
			return "-"
		}
		return seconds(s.componentsSave)
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	clientGo, warm, components := starts[0], starts[2], starts[3]
	if warm.requests.FullSyncs() == 0 {
		fmt.Fprintf(out, "warm restart used: no full LIST or watch-list; against client-go's cold start %s\n", ratios(warm, clientGo))
	} else {
		fmt.Fprintf(out, "warm restart not used: %d full syncs (the log says why; a fallback syncs as a cold start does)\n", warm.requests.FullSyncs())
	}
	if components.fallback != "" {
		fmt.Fprintf(out, "components: fell back (%s)\n", components.fallback)
	} else {
		fmt.Fprintf(out, "components: %d full syncs; against client-go's cold start %s\n", components.requests.FullSyncs(), ratios(components, clientGo))
		fmt.Fprintf(out, "components: load %s, probe and catch-up %s, decode for the handlers %s\n", seconds(components.phases[0]), seconds(components.phases[1]), seconds(components.phases[2]))
	}
	for _, s := range []start{warm, components} {
		if s.fallback != "" {
			continue
		}
		if !sameInitialList(s.seen, clientGo.seen) {
			return fmt.Errorf("the %v start's handler saw another initial list than client-go's cold start's (%d adds, %d other notifications; client-go %d, %d)",
				s.kind, len(s.seen.initial), s.seen.others, len(clientGo.seen.initial), clientGo.seen.others)
		}
		fmt.Fprintf(out, "handlers: the %v start's saw exactly client-go's cold initial list (%d adds, every one isInInitialList, nothing else)\n", s.kind, len(s.seen.initial))
	}
	return nil
}

// ratios compares a warm start with a cold one: bytes read, the
// informer's CPU and time until the handler synced, then until the
// informer did (when both were marked), peak heap over steady.
func ratios(warm, cold start) string {
	out := fmt.Sprintf("bytes read %s, informer CPU %s, time to handler sync %s",
		ratio(float64(warm.read), float64(cold.read)), ratio(float64(warm.cost.client()), float64(cold.cost.client())),
		ratio(float64(warm.cost.sync), float64(cold.cost.sync)))
	if w, c := warm.cost.informer, cold.cost.informer; w != nil && c != nil {
		out += fmt.Sprintf("; until the informer's HasSynced: CPU %s, time %s",
			ratio(float64(w.client()), float64(c.client())), ratio(float64(w.sync), float64(c.sync)))
	}
	return out + fmt.Sprintf("; peak heap %s of its steady heap", ratio(float64(warm.cost.peak), float64(warm.cost.steady)))
}

// informerCell is v of s's cost until the informer's HasSynced, "-" when
// the start did not mark it.
func informerCell(s start, v func(*cost) time.Duration) string {
	if s.cost.informer == nil {
		return "-"
	}
	return seconds(v(s.cost.informer))
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func size(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f×", a/b)
}
