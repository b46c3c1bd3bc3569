// Command benchratio runs each benchmark case twice in one process, once on
// openinformer and once on client-go's tools/cache, and prints the ratio
// ours/client-go for every metric. Ratios, not absolute numbers, are what is
// comparable on a shared, noisy machine.
//
// Usage: go run ./internal/cmd/benchratio [-run REGEXP] [-benchtime 1s]
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"testing"
)

// benchCase is one comparison. Ours and Theirs must do the same work; extra
// metrics reported with b.ReportMetric are compared too.
type benchCase struct {
	Name   string
	Ours   func(b *testing.B)
	Theirs func(b *testing.B)
}

var cases []benchCase

// register adds cases; each area of the library registers its own from init.
func register(cs ...benchCase) { cases = append(cases, cs...) }

func main() {
	testing.Init()
	run := flag.String("run", ".", "only cases whose name matches this regexp")
	flag.Parse()
	re, err := regexp.Compile(*run)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(2)
	}
	sort.SliceStable(cases, func(i, j int) bool { return cases[i].Name < cases[j].Name })
	fmt.Printf("%-48s %-14s %14s %14s %9s\n", "case", "metric", "ours", "client-go", "ratio")
	for _, c := range cases {
		if re.MatchString(c.Name) {
			report(c.Name, testing.Benchmark(c.Ours), testing.Benchmark(c.Theirs))
		}
	}
}

func report(name string, ours, theirs testing.BenchmarkResult) {
	row := func(metric string, o, t float64) {
		ratio := "n/a"
		if t != 0 {
			ratio = fmt.Sprintf("%.3fx", o/t)
		}
		fmt.Printf("%-48s %-14s %14s %14s %9s\n", name, metric, number(o), number(t), ratio)
	}
	row("ns/op", float64(ours.NsPerOp()), float64(theirs.NsPerOp()))
	row("allocs/op", float64(ours.AllocsPerOp()), float64(theirs.AllocsPerOp()))
	row("B/op", float64(ours.AllocedBytesPerOp()), float64(theirs.AllocedBytesPerOp()))
	keys := make([]string, 0, len(ours.Extra))
	for k := range ours.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		row(k, ours.Extra[k], theirs.Extra[k])
	}
}

// number prints large values with one decimal and small ones, such as
// ratios reported as metrics, with three.
func number(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
