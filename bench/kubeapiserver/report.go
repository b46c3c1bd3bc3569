package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// metric is one column of the tables: a figure of one variant in one round.
type metric struct {
	name   string
	format string
	value  func(s syncReport, st steadyReport) float64
}

var metricsTable = []metric{
	{"sync wall s", "%.2f", func(s syncReport, _ steadyReport) float64 { return s.WallSec }},
	{"sync CPU s", "%.2f", func(s syncReport, _ steadyReport) float64 { return s.CPUSec }},
	{"sync GC CPU s", "%.2f", func(s syncReport, _ steadyReport) float64 { return s.GCSec }},
	{"sync alloc MiB", "%.0f", func(s syncReport, _ steadyReport) float64 { return mb(s.AllocBytes) }},
	{"peak live MiB", "%.0f", func(s syncReport, _ steadyReport) float64 { return mb(s.PeakLive) }},
	{"peak heap MiB", "%.0f", func(s syncReport, _ steadyReport) float64 { return mb(s.PeakHeap) }},
	{"heap B/pod", "%.0f", func(s syncReport, _ steadyReport) float64 {
		return float64(s.SteadyLive-min(s.BaseLive, s.SteadyLive)) / float64(s.Pods)
	}},
	{"end live MiB", "%.0f", func(_ syncReport, st steadyReport) float64 { return mb(st.EndLive) }},
	{"max live MiB", "%.0f", func(_ syncReport, st steadyReport) float64 { return mb(st.MaxLive) }},
	{"steady max live MiB", "%.0f", func(_ syncReport, st steadyReport) float64 { return mb(st.SteadyMaxLive) }},
	{"peak/steady", "%.2f", func(s syncReport, _ steadyReport) float64 { return float64(s.PeakLive) / float64(s.SteadyLive) }},
	{"CPU µs/event", "%.1f", func(_ syncReport, st steadyReport) float64 { return perEvent(st.CPUSec*1e6, st) }},
	{"GC µs/event", "%.1f", func(_ syncReport, st steadyReport) float64 { return perEvent(st.GCSec*1e6, st) }},
	{"CPU−GC µs/event", "%.1f", func(_ syncReport, st steadyReport) float64 { return perEvent(max(st.CPUSec-st.GCSec, 0)*1e6, st) }},
	{"steady GCs", "%.0f", func(_ syncReport, st steadyReport) float64 { return float64(st.GCCycles) }},
	{"GCs/1k events", "%.2f", func(_ syncReport, st steadyReport) float64 { return perEvent(1000*float64(st.GCCycles), st) }},
	{"allocs/event", "%.0f", func(_ syncReport, st steadyReport) float64 { return perEvent(float64(st.AllocObjects), st) }},
	{"B/event", "%.0f", func(_ syncReport, st steadyReport) float64 { return perEvent(float64(st.AllocBytes), st) }},
}

func perEvent(v float64, st steadyReport) float64 {
	if st.Events == 0 {
		return 0
	}
	return v / float64(st.Events)
}

// reference is the variant a variant is compared with: client-go's
// informer on the same start path.
func reference(v string, variants []string) string {
	if strings.HasSuffix(v, "-list") && slices.Contains(variants, "client-go-list") {
		return "client-go-list"
	}
	return "client-go"
}

// printTables prints the medians over rounds with their ranges, then the
// ratios ours/client-go computed round by round.
func printTables(w io.Writer, c config, variants []string, rounds []roundResult, loadStart, loadEnd string) {
	fmt.Fprintf(w, "\n%d pods, %d rounds, steady phase %v at %d updates/s; load average %s at the start, %s at the end\n",
		c.pods, len(rounds), c.steady, c.rate, loadStart, loadEnd)
	fmt.Fprintln(w, "\nMedian over rounds (min–max):")
	header(w, "variant")
	for _, v := range variants {
		cells := make([]string, len(metricsTable))
		for i, m := range metricsTable {
			var xs []float64
			for _, r := range rounds {
				xs = append(xs, m.value(r.sync[v], r.steady[v]))
			}
			cells[i] = spread(m.format, xs)
		}
		fmt.Fprintf(w, "| %s | %s |\n", v, strings.Join(cells, " | "))
	}
	fmt.Fprintln(w, "\nRatio ours/client-go on the same start path, per round, median (min–max):")
	header(w, "variant / reference")
	for _, v := range variants {
		ref := reference(v, variants)
		if v == ref || !slices.Contains(variants, ref) {
			continue
		}
		cells := make([]string, len(metricsTable))
		for i, m := range metricsTable {
			var xs []float64
			for _, r := range rounds {
				if d := m.value(r.sync[ref], r.steady[ref]); d != 0 {
					xs = append(xs, m.value(r.sync[v], r.steady[v])/d)
				}
			}
			cells[i] = spread("%.2f×", xs)
		}
		fmt.Fprintf(w, "| %s / %s | %s |\n", v, ref, strings.Join(cells, " | "))
	}
}

func header(w io.Writer, first string) {
	names := []string{first}
	for _, m := range metricsTable {
		names = append(names, m.name)
	}
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
}

// spread formats the median of xs and, for several, their range.
func spread(format string, xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	s := slices.Sorted(slices.Values(xs))
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	if len(s) == 1 {
		return fmt.Sprintf(format, med)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", med, s[0], s[len(s)-1])
}
