package main

import (
	"fmt"
	"io"
	"strings"
)

// restartMetric is one row of the restart table: a figure of one start.
type restartMetric struct {
	name, format string
	value        func(r startResult) float64
}

// oursOnly are the figures with no client-go counterpart to divide by.
var oursOnly = map[string]bool{"stop s": true, "snapshot MiB": true}

var restartTable = []restartMetric{
	{"informer HasSynced s", "%.2f", func(r startResult) float64 { return r.sync.Informer.WallSec }},
	{"handler HasSynced s", "%.2f", func(r startResult) float64 { return r.sync.Handler.WallSec }},
	{"CPU until informer synced s", "%.2f", func(r startResult) float64 { return r.sync.Informer.CPUSec }},
	{"CPU until handler synced s", "%.2f", func(r startResult) float64 { return r.sync.Handler.CPUSec }},
	{"of which system s", "%.2f", func(r startResult) float64 { return r.sync.Handler.SysSec }},
	{"GC CPU until handler synced s", "%.2f", func(r startResult) float64 { return r.sync.Handler.GCSec }},
	{"allocated until informer synced MiB", "%.0f", func(r startResult) float64 { return mb(r.sync.Informer.AllocBytes) }},
	{"allocated until handler synced MiB", "%.0f", func(r startResult) float64 { return mb(r.sync.Handler.AllocBytes) }},
	{"read until informer synced MiB", "%.2f", func(r startResult) float64 { return mbi(r.sync.Informer.Requests.Payload) }},
	{"read until handler synced MiB", "%.2f", func(r startResult) float64 { return mbi(r.sync.Handler.Requests.Payload) }},
	{"wire bytes until handler synced MiB", "%.2f", func(r startResult) float64 { return mbi(r.sync.Handler.Requests.Wire) }},
	{"LISTs without limit", "%.0f", func(r startResult) float64 { return float64(r.sync.Handler.Requests.ListsFull) }},
	{"LISTs with limit", "%.0f", func(r startResult) float64 { return float64(r.sync.Handler.Requests.ListsLimited) }},
	{"watch-lists", "%.0f", func(r startResult) float64 { return float64(r.sync.Handler.Requests.WatchLists) }},
	{"plain watches", "%.0f", func(r startResult) float64 { return float64(r.sync.Handler.Requests.Watches) }},
	{"peak live heap MiB", "%.0f", func(r startResult) float64 { return mb(r.sync.PeakLive) }},
	{"peak heap objects MiB", "%.0f", func(r startResult) float64 { return mb(r.sync.PeakHeap) }},
	{"steady live heap MiB", "%.0f", func(r startResult) float64 { return mb(r.sync.SteadyLive) }},
	{"peak live / steady", "%.2f", func(r startResult) float64 { return ratio(r.sync.PeakLive, r.sync.SteadyLive) }},
	{"peak heap objects / steady", "%.2f", func(r startResult) float64 { return ratio(r.sync.PeakHeap, r.sync.SteadyLive) }},
	{"stop s", "%.2f", func(r startResult) float64 { return r.stop.StopSec }},
	{"snapshot MiB", "%.0f", func(r startResult) float64 { return mbi(r.stop.SnapshotBytes) }},
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// mbi is mb of a signed count.
func mbi(b int64) float64 { return float64(b) / (1 << 20) }

// printRestartTables prints, per figure, the medians over rounds with their
// ranges for each start, then the ratios warm/client-go cold and warm/ours
// cold computed round by round; then each round's outcome, check, downtime
// and load.
func printRestartTables(w io.Writer, c config, rounds []restartRound, loadStart, loadEnd string) {
	fmt.Fprintf(w, "\n%d pods, %d rounds, %.2f%% changed while down, %d status patches/s during each start;"+
		" load average %s at the start, %s at the end\n", c.pods, len(rounds), 100*c.changed, c.rate, loadStart, loadEnd)
	fmt.Fprintln(w, "\nMedian over rounds (min–max); ratios per round, median (min–max):")
	fmt.Fprintln(w, "| figure | client-go cold | ours cold | ours warm | warm / client-go cold | warm / ours cold |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	pick := func(f func(restartRound) startResult, m restartMetric) []float64 {
		var xs []float64
		for _, r := range rounds {
			xs = append(xs, m.value(f(r)))
		}
		return xs
	}
	clientGo := func(r restartRound) startResult { return r.clientGo }
	cold := func(r restartRound) startResult { return r.cold }
	warm := func(r restartRound) startResult { return r.warm }
	for _, m := range restartTable {
		ws := pick(warm, m)
		vsClientGo := spread("%.3f×", divide(ws, pick(clientGo, m)))
		if oursOnly[m.name] {
			vsClientGo = "–"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", m.name, spread(m.format, pick(clientGo, m)),
			spread(m.format, pick(cold, m)), spread(m.format, ws), vsClientGo, spread("%.3f×", divide(ws, pick(cold, m))))
	}
	fmt.Fprintln(w)
	for i, r := range rounds {
		fmt.Fprintf(w, "round %d: warm outcome %q, cold outcome %q; downtime %.1fs (%d updated, %d deleted, %d created in %.1fs);"+
			" initial lists equal an exact LIST: client-go %v, cold %v, warm %v; warm requests %s; load %s\n",
			i+1, r.warm.sync.Outcome, r.cold.sync.Outcome, r.downtime.Seconds(), r.changes.updated, r.changes.deleted,
			r.changes.created, r.changes.took.Seconds(), r.clientGo.verify.Equal, r.cold.verify.Equal, r.warm.verify.Equal,
			requestsString(r.warm.sync.Handler.Requests), r.load)
	}
}

// divide is a/b element by element, leaving out zero divisors.
func divide(a, b []float64) []float64 {
	var out []float64
	for i := range a {
		if b[i] != 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

func requestsString(r requests) string {
	var parts []string
	for _, p := range []struct {
		n    int64
		name string
	}{{r.ListsFull, "LIST"}, {r.ListsLimited, "limited LIST"}, {r.WatchLists, "watch-list"}, {r.Watches, "watch"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.name))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
