// Command benchratio runs each benchmark case on openinformer and on
// client-go's tools/cache in one process and prints the ratio
// ours/client-go for every metric. Ratios, not absolute numbers, are what is
// comparable on a shared, noisy machine.
//
// With -rounds N each case runs N times on each side, alternating which
// side goes first, and every column is a median: a neighbour's burst of
// load then skews one round's ratio instead of the answer. The range of
// the per-round ratios is printed beside it, so that a difference smaller
// than the noise is seen to be one.
//
// -short keeps only the headline cases, the figures the README's summary
// quotes; -list prints the case names and runs nothing. Before it starts,
// the command prints an estimate of how long the run will take.
//
// Usage: go run ./internal/cmd/benchratio [-run REGEXP] [-short] [-list] [-rounds N] [-test.benchtime 1s]
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"testing"
	"time"
)

// headline names the cases behind the README's performance summary; -short
// runs only these.
var headline = []string{
	"Store/WriteWhileListing-10k-10readers",
	"informer/events-4-handlers-after-50k-sync",
	"informer/initial-sync-100k-list",
	"informer/late-handler-synced-after-100k-sync",
	"Reflector/WatchList100k",
	"queue/RealFIFO-default/add+pop-steady",
}

// secondsPerSide is how long one side of a case takes on average at the
// default one-second benchtime on 2 idle cores: the timed runs while
// testing.Benchmark grows b.N, plus each case's setup (the -short set took
// 59 s of CPU for 12 sides).
const secondsPerSide = 5

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
	rounds := flag.Int("rounds", 1, "runs of each side per case; columns are medians")
	short := flag.Bool("short", false, "only the headline cases")
	list := flag.Bool("list", false, "print the selected case names and exit")
	flag.Parse()
	re, err := regexp.Compile(*run)
	if err != nil || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "benchratio: bad -run or -rounds:", err)
		os.Exit(2)
	}
	selected := selectCases(re, *short)
	if *list {
		for _, c := range selected {
			fmt.Println(c.Name)
		}
		return
	}
	fmt.Fprintf(os.Stderr, "benchratio: %d cases x %d rounds x 2 sides, about %s on 2 idle cores, longer on a busy machine\n",
		len(selected), *rounds, estimate(len(selected)**rounds))
	start := time.Now()
	fmt.Printf("%-48s %-14s %14s %14s %9s  %s\n", "case", "metric", "ours", "client-go", "ratio", "range")
	for _, c := range selected {
		ours, theirs := measure(c, *rounds)
		report(c.Name, ours, theirs)
	}
	fmt.Fprintf(os.Stderr, "benchratio: took %s\n", time.Since(start).Round(time.Second))
}

// selectCases returns the cases to run in name order: those matching re,
// and with short only the headline ones. A headline name that no longer
// names a case is reported, so that -short never shrinks unnoticed.
func selectCases(re *regexp.Regexp, short bool) []benchCase {
	sort.SliceStable(cases, func(i, j int) bool { return cases[i].Name < cases[j].Name })
	var out []benchCase
	for _, c := range cases {
		if re.MatchString(c.Name) && (!short || slices.Contains(headline, c.Name)) {
			out = append(out, c)
		}
	}
	for _, name := range headline {
		if short && !slices.ContainsFunc(cases, func(c benchCase) bool { return c.Name == name }) {
			fmt.Fprintf(os.Stderr, "benchratio: headline case %q does not exist\n", name)
		}
	}
	return out
}

// estimate scales secondsPerSide by the benchtime in effect (a duration;
// an iteration count such as 100x is taken as the default second).
func estimate(runsPerSide int) time.Duration {
	scale := 1.0
	if f := flag.Lookup("test.benchtime"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil {
			scale = d.Seconds()
		}
	}
	secs := float64(2*runsPerSide) * secondsPerSide * scale
	return time.Duration(secs * float64(time.Second)).Round(time.Second)
}

// measure runs c rounds times per side, each round in the other order than
// the last, so that warm-up and drift hit both sides alike.
func measure(c benchCase, rounds int) (ours, theirs []testing.BenchmarkResult) {
	for r := range rounds {
		if r%2 == 0 {
			ours = append(ours, testing.Benchmark(c.Ours))
			theirs = append(theirs, testing.Benchmark(c.Theirs))
		} else {
			theirs = append(theirs, testing.Benchmark(c.Theirs))
			ours = append(ours, testing.Benchmark(c.Ours))
		}
	}
	return ours, theirs
}

// metric extracts one figure from a result.
type metric func(testing.BenchmarkResult) float64

func report(name string, ours, theirs []testing.BenchmarkResult) {
	row := func(label string, m metric) {
		o, t := make([]float64, len(ours)), make([]float64, len(theirs))
		var ratios []float64
		for i := range ours {
			o[i], t[i] = m(ours[i]), m(theirs[i])
			if t[i] != 0 {
				ratios = append(ratios, o[i]/t[i])
			}
		}
		ratio, spread := "n/a", ""
		if len(ratios) > 0 {
			ratio = fmt.Sprintf("%.3fx", median(ratios))
			if len(ratios) > 1 {
				spread = fmt.Sprintf("%.3f–%.3f", ratios[0], ratios[len(ratios)-1])
			}
		}
		fmt.Printf("%-48s %-14s %14s %14s %9s  %s\n", name, label, number(median(o)), number(median(t)), ratio, spread)
	}
	row("ns/op", func(r testing.BenchmarkResult) float64 { return float64(r.NsPerOp()) })
	row("allocs/op", func(r testing.BenchmarkResult) float64 { return float64(r.AllocsPerOp()) })
	row("B/op", func(r testing.BenchmarkResult) float64 { return float64(r.AllocedBytesPerOp()) })
	keys := make([]string, 0, len(ours[0].Extra))
	for k := range ours[0].Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		row(k, func(r testing.BenchmarkResult) float64 { return r.Extra[k] })
	}
}

// median of xs, which it leaves sorted; the mean of the middle two for an
// even count.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// number prints large values with one decimal and small ones, such as
// ratios reported as metrics, with three.
func number(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
