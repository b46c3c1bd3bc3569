package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// figure is one row of a table: a value of one start.
type figure[T any] struct {
	name, format string
	value        func(T) float64
}

var measureFigures = []figure[syncReport]{
	{"sync s (NewManager to synced)", "%.2f", func(r syncReport) float64 { return r.SyncSeconds }},
	{"CPU from process start to synced s", "%.2f", func(r syncReport) float64 { return r.CPUToReady }},
	{"peak heap MB (heap objects, start to synced)", "%.0f", func(r syncReport) float64 { return r.PeakHeapMB }},
	{"peak live heap MB (marked by a GC)", "%.0f", func(r syncReport) float64 { return r.PeakLiveMB }},
	{"GCs until synced", "%.0f", func(r syncReport) float64 { return float64(r.GCs) }},
	{"peak heap MB, start to every object reconciled", "%.0f", func(r syncReport) float64 { return r.UntilReconciled.PeakHeapMB }},
	{"peak live heap MB, start to every object reconciled", "%.0f", func(r syncReport) float64 { return r.UntilReconciled.PeakLiveMB }},
	{"steady heap MB", "%.1f", func(r syncReport) float64 { return r.SteadyHeapMB }},
	{"Get p99 µs", "%.0f", func(r syncReport) float64 { return r.GetP99Micros }},
	{"List(MatchingLabels 1%) p50 µs", "%.0f", func(r syncReport) float64 { return r.ListP50Micros }},
}

var windowFigures = []figure[windowResult]{
	{"status updates in the window", "%.0f", func(w windowResult) float64 { return float64(w.Sent) }},
	{"reconciles in the window", "%.0f", func(w windowResult) float64 { return float64(w.Reconciles) }},
	{"CPU (user+sys) per update µs", "%.1f", windowResult.cpuPerEventMicros},
	{"allocated per update KB", "%.1f", func(w windowResult) float64 { return safeDiv(w.AllocMB*1024, float64(w.Sent)) }},
}

var restartFigures = []figure[restartStart]{
	{"process start to every cache synced s", "%.2f", func(s restartStart) float64 { return s.sync.ProcessToSynced }},
	{"process start to first reconcile s", "%.2f", func(s restartStart) float64 { return s.sync.ProcessToFirstReconcile }},
	{"process start to ready (both) s", "%.2f", func(s restartStart) float64 { return s.sync.ProcessToReady }},
	{"CPU until ready s", "%.2f", func(s restartStart) float64 { return s.sync.CPUToReady }},
	{"peak heap until synced MB", "%.0f", func(s restartStart) float64 { return s.sync.PeakHeapMB }},
	{"full LISTs (client)", "%.0f", func(s restartStart) float64 { return float64(s.sync.Requests.FullLists + s.sync.Requests.ListPages) }},
	{"watch-lists (client)", "%.0f", func(s restartStart) float64 { return float64(s.sync.Requests.WatchLists) }},
	{"probe LISTs limit=1 (client)", "%.0f", func(s restartStart) float64 { return float64(s.sync.Requests.ProbeLists) }},
	{"LISTs at the server", "%.0f", func(s restartStart) float64 { return s.server.Lists }},
	{"LIST bytes at the server MB", "%.3f", func(s restartStart) float64 { return s.server.ListBytes / (1 << 20) }},
	{"watch-lists at the server", "%.0f", func(s restartStart) float64 { return s.server.WatchLists }},
	{"snapshot MB (saved, both informers)", "%.1f", func(s restartStart) float64 { return mbi(s.snapshot.Bytes) }},
	{"snapshot dir on disk MB (after the kill)", "%.1f", func(s restartStart) float64 { return mbi(s.diskBytes) }},
}

func report(w io.Writer, c config, measured []measureRound, restarted []restartRound) {
	fmt.Fprintf(w, "\n%d pods (status %v), %d secrets; load average at the end %s\n", c.pods, c.status, c.secrets, loadAvg())
	if len(measured) > 0 {
		fmt.Fprintf(w, "\nMeasure rounds: %d. Median (min–max); ratio crcache / controller-runtime per round, median (min–max).\n", len(measured))
		fmt.Fprintln(w, "| figure | controller-runtime | crcache | crcache / controller-runtime |")
		fmt.Fprintln(w, "|---|---|---|---|")
		for _, f := range measureFigures {
			row(w, f.name, f.format, pick(measured, func(m measureRound) syncReport { return m.starts[0] }, f.value),
				pick(measured, func(m measureRound) syncReport { return m.starts[1] }, f.value))
		}
		for _, reconciler := range []string{"noop", "get"} {
			if len(measured[0].windows[reconciler]) != 2 {
				continue
			}
			for _, f := range windowFigures {
				name := fmt.Sprintf("%s (%s reconciler, %s)", f.name, reconciler, c.window)
				row(w, name, f.format, pick(measured, func(m measureRound) windowResult { return m.windows[reconciler][0] }, f.value),
					pick(measured, func(m measureRound) windowResult { return m.windows[reconciler][1] }, f.value))
			}
		}
		for i, m := range measured {
			fmt.Fprintf(w, "round %d loads: sync %s; window %s\n", i+1, m.load, windowLoads(m))
		}
	}
	if len(restarted) > 0 {
		fmt.Fprintf(w, "\nRestart rounds: %d, %d status updates/s throughout. Median (min–max).\n", len(restarted), c.rate)
		fmt.Fprintln(w, "| figure | controller-runtime cold | crcache cold | crcache warm (after SIGKILL) | warm / controller-runtime cold |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for _, f := range restartFigures {
			col := func(i int) []float64 {
				return pick(restarted, func(r restartRound) restartStart { return r.starts[i] }, f.value)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", f.name, spread(f.format, col(0)), spread(f.format, col(1)), spread(f.format, col(2)),
				spread("%.3f×", divide(col(2), col(0))))
		}
		for i, r := range restarted {
			var loads, outcomes []string
			for _, s := range r.starts {
				loads = append(loads, s.load)
				outcomes = append(outcomes, fmt.Sprint(s.sync.Outcomes))
			}
			fmt.Fprintf(w, "round %d: %d updates sent (%d failed); loads %s; restart outcomes %s\n", i+1, r.sent, r.failed,
				strings.Join(loads, " / "), strings.Join(outcomes, " "))
		}
	}
}

func windowLoads(m measureRound) string {
	var l []string
	for _, reconciler := range []string{"noop", "get"} {
		for _, w := range m.windows[reconciler] {
			l = append(l, reconciler+" "+w.Load)
		}
	}
	return strings.Join(l, " / ")
}

func row(w io.Writer, name, format string, a, b []float64) {
	fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, spread(format, a), spread(format, b), spread("%.2f×", divide(b, a)))
}

func pick[R, T any](rounds []R, start func(R) T, value func(T) float64) []float64 {
	var xs []float64
	for _, r := range rounds {
		xs = append(xs, value(start(r)))
	}
	return xs
}

func divide(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = safeDiv(a[i], b[i])
	}
	return out
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// spread is the median and, over more than one value, the range.
func spread(format string, xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	if len(s) == 1 || s[0] == s[len(s)-1] {
		return fmt.Sprintf(format, med)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", med, s[0], s[len(s)-1])
}
