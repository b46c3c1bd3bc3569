// Command memratio measures what a cache of realistic objects costs in heap,
// in client-go's Indexer, in ours, and in the compact forms that issue 17
// considers (encoded bytes per codec, compressed, with managedFields
// stripped), and what reading compact objects back costs. Every heap figure
// comes from its own child process, so that one layout's garbage and
// fragmentation never counts against another's; ratios are against
// client-go's Indexer holding the same objects decoded. Each row prints its
// process's peak RSS and running time too. The parent writes the objects'
// JSON once to a temporary file (1.4 GB for 100k pods), removed at the end,
// which every row decodes; at 100k pods a row then takes a few minutes.
//
// Usage:
//
//	go run ./internal/cmd/memratio [-n 100000] [-kind pods|configmaps|custom|small] [-run REGEXP] [-timing=true] [-dict 16384] [-heapprofile PREFIX]
//
// With -heapprofile, each row also writes the heap profile of what it
// holds to PREFIX, the row's number and ".pprof" (go tool pprof
// -sample_index=inuse_space), recorded at every allocation.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// result is what a child reports on its last line of output.
type result struct {
	Variant string  `json:"variant"`
	Objects int     `json:"objects"`
	Heap    float64 `json:"heap"`
	// PeakRSS is the child's peak resident set in bytes, and Seconds its
	// running time, both including making the objects.
	PeakRSS float64 `json:"peakRSS"`
	Seconds float64 `json:"seconds"`
	// Extra holds figures beyond the heap (timings), in display order.
	Extra []figure `json:"extra,omitempty"`
}

type figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

func main() {
	child := flag.String("child", "", "internal: measure one variant in this process")
	n := flag.Int("n", 100_000, "objects in each cache")
	kind := flag.String("kind", "pods", "pods, configmaps, custom or small")
	run := flag.String("run", ".", "only variants whose name matches this regexp")
	timing := flag.Bool("timing", true, "also measure decode and ByIndex times (pods only)")
	flag.StringVar(&objectsFile, "objects", "", "internal: the objects' JSON, one a line, written by the parent")
	flag.IntVar(&dictionarySize, "dict", dictionarySize, "size of the compression dictionary in bytes (at most 32768)")
	flag.StringVar(&heapProfile, "heapprofile", "", "write each row's heap profile to this prefix, the row's number and .pprof")
	flag.Parse()
	if *child != "" {
		if err := measure(*child, *kind, *n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := parent(*kind, *n, *run, *timing); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func parent(kind string, n int, run string, timing bool) error {
	match, err := regexp.Compile(run)
	if err != nil {
		return err
	}
	fmt.Printf("memratio: %d %s, heap after GC per cached object; ratio against client-go's Indexer;\n"+
		"a dictionary (DEFLATE level %d) is up to %d bytes from the first %d objects\n\n", n, kind, dictLevel, dictionarySize, dictionarySamples)
	objects, err := writeObjects(kind, n)
	if err != nil {
		return err
	}
	defer os.Remove(objects)
	fmt.Printf("| %-34s | %12s | %8s | %11s | %7s |\n|%s|%s|%s|%s|%s|\n", "variant", "bytes/object", "ratio", "peak RSS MB", "seconds",
		strings.Repeat("-", 36), strings.Repeat("-", 14), strings.Repeat("-", 10), strings.Repeat("-", 13), strings.Repeat("-", 9))
	var base float64
	for i, v := range variants {
		if v.name != baseline && !match.MatchString(v.name) {
			continue
		}
		args := []string{"-objects", objects}
		if heapProfile != "" {
			args = append(args, "-heapprofile", fmt.Sprintf("%s%d.pprof", heapProfile, i))
		}
		r, err := spawn(v.name, kind, n, args...)
		if err != nil {
			return err
		}
		per := r.Heap / float64(r.Objects)
		if v.name == baseline {
			base = per
		}
		fmt.Printf("| %-34s | %12.0f | %7.3fx | %11.0f | %7.0f |\n", v.name, per, per/base, r.PeakRSS/(1<<20), r.Seconds)
	}
	if timing && kind == "pods" {
		return printTimings()
	}
	return nil
}

func printTimings() error {
	r, err := spawn(timingVariant, "pods", 0)
	if err != nil {
		return err
	}
	fmt.Printf("\n| %-52s | %10s |\n|%s|%s|\n", "read cost (pods)", "value", strings.Repeat("-", 54), strings.Repeat("-", 12))
	for _, f := range r.Extra {
		fmt.Printf("| %-52s | %7.2f %-2s |\n", f.Name, f.Value, f.Unit)
	}
	return nil
}

// spawn runs one measurement in a fresh process of this program, with args
// added to its flags.
func spawn(variant, kind string, n int, args ...string) (result, error) {
	exe, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	cmd := exec.Command(exe, "-child", variant, "-kind", kind, "-n", fmt.Sprint(n), "-dict", fmt.Sprint(dictionarySize))
	cmd.Args = append(cmd.Args, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", variant, err)
	}
	var last string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		last = sc.Text()
	}
	var r result
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		return result{}, fmt.Errorf("%s: reading %q: %w", variant, last, err)
	}
	return r, nil
}
