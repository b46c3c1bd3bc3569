package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// column is one figure of a variant's round.
type column struct {
	name  string
	value func(result) float64
	ratio bool
}

var columns = []column{
	{"sync s", func(r result) float64 { return r.sync.WallSec }, false},
	{"sync CPU s", func(r result) float64 { return r.sync.CPUSec }, true},
	{"load CPU s", func(r result) float64 { return r.final.Load.CPUSec }, true},
	{"idle CPU s", func(r result) float64 { return r.final.Idle.CPUSec }, true},
	{"peak RSS MB", func(r result) float64 { return float64(r.final.PeakRSS) / 1e6 }, true},
	{"peak heap MB", func(r result) float64 { return float64(r.final.PeakHeap) / 1e6 }, true},
	{"mean live MB", func(r result) float64 { return float64(r.final.MeanLive) / 1e6 }, true},
	{"steady heap MB", func(r result) float64 { return float64(r.final.SteadyLive) / 1e6 }, true},
	{"load alloc MB", func(r result) float64 { return float64(r.final.Load.AllocBytes) / 1e6 }, true},
	{"events", func(r result) float64 { return float64(r.final.Load.Work.Events) }, false},
	{"syncs", func(r result) float64 { return float64(r.final.Load.Work.Syncs) }, false},
	{"lists", func(r result) float64 { return float64(r.final.Load.Work.Lists + r.final.Idle.Work.Lists) }, false},
	{"pods listed", func(r result) float64 { return float64(r.final.Load.Work.Listed + r.final.Idle.Work.Listed) }, false},
}

// printReport prints each round's figures per variant, then the ratios to
// client-go's (medians over rounds of the round-by-round ratios).
func printReport(w io.Writer, c config, variants []string, rounds []map[string]result, loadStart, loadEnd string) {
	fmt.Fprintf(w, "\nlisterheavy: %d pods in %d namespaces, %d updates/s for %v, then %v idle; %d round(s); load %s at start, %s at end\n",
		c.pods, c.namespaces, c.rate, c.load, c.idle, len(rounds), loadStart, loadEnd)
	names := make([]string, len(columns))
	for i, col := range columns {
		names[i] = col.name
	}
	fmt.Fprintf(w, "\n| round | variant | %s |\n|---|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(columns)))
	for i, round := range rounds {
		for _, v := range variants {
			cells := make([]string, len(columns))
			for j, col := range columns {
				cells[j] = fmt.Sprintf("%.1f", col.value(round[v]))
			}
			fmt.Fprintf(w, "| %d | %s | %s |\n", i+1, v, strings.Join(cells, " | "))
		}
	}
	if !slices.Contains(variants, "client-go") {
		return
	}
	var ratioCols []column
	for _, col := range columns {
		if col.ratio {
			ratioCols = append(ratioCols, col)
		}
	}
	fmt.Fprintf(w, "\nratios to client-go (median over rounds, range in brackets)\n\n| variant |")
	for _, col := range ratioCols {
		fmt.Fprintf(w, " %s |", col.name)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(ratioCols)))
	for _, v := range variants {
		if v == "client-go" {
			continue
		}
		fmt.Fprintf(w, "| %s |", v)
		for _, col := range ratioCols {
			var rs []float64
			for _, round := range rounds {
				if base := col.value(round["client-go"]); base > 0 {
					rs = append(rs, col.value(round[v])/base)
				}
			}
			fmt.Fprintf(w, " %s |", ratioCell(rs))
		}
		fmt.Fprintln(w)
	}
}

func ratioCell(rs []float64) string {
	if len(rs) == 0 {
		return "-"
	}
	slices.Sort(rs)
	med := rs[len(rs)/2]
	if len(rs) == 1 {
		return fmt.Sprintf("%.2fx", med)
	}
	return fmt.Sprintf("%.2fx [%.2f-%.2f]", med, rs[0], rs[len(rs)-1])
}
