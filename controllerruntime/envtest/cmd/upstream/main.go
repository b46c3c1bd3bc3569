// Command upstream runs controller-runtime's own tests against crcache: the
// pkg/cache suite and the read-your-writes (ConsistentClient) tests of
// pkg/client, on envtest with a real kube-apiserver and etcd.
//
// It copies the test files from the module cache (controller-runtime's code
// is never committed here) into zz_upstream/, replaces every call of
// controller-runtime's cache.New with crcache.New(options), where the
// options are chosen by -mode, runs them with go test, and prints every
// spec's result. Tests that cannot hold against crcache by design are
// skipped and listed with the reason; any other failure fails the run.
//
// Usage:
//
//	go run ./cmd/upstream -apiserver PATH -etcd PATH [-mode default,compact] [-race]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// suite is one upstream test package copied and run.
type suite struct {
	name  string   // directory under zz_upstream
	pkg   string   // package path inside controller-runtime's module
	files []string // test files copied
	dirs  []string // data directories copied
	// dropped are the package's other test files, with why they are not run.
	dropped map[string]string
}

var suites = []suite{{
	name:  "cache",
	pkg:   "pkg/cache",
	files: []string{"cache_suite_test.go", "cache_test.go", "informer_cache_test.go"},
	dropped: map[string]string{
		"defaulting_test.go":          "package cache (internal): tests controller-runtime's unexported defaultOpts; crcache's copy of that defaulting is covered by the cache_test.go specs that exercise each precedence rule",
		"informer_cache_unit_test.go": "package cache (internal): tests the unexported informerCache type",
	},
}, {
	name:  "client",
	pkg:   "pkg/client",
	files: []string{"client_suite_test.go", "consistency_envtest_test.go"},
	dirs:  []string{"testdata"},
	dropped: map[string]string{
		"(every other *_test.go)": "tests the client, not the cache; only the read-your-writes tests build a cache",
	},
}}

// skipped are the tests that assert controller-runtime's NewInformer hook
// is used: crcache runs only its own informers, by design.
var skipped = map[string]string{
	"TestReaderWaitsForCacheSync": "injects controllertest.FakeInformer through Options.NewInformer to hold the sync; crcache ignores NewInformer (every informer is openinformer's)",
	"TestIndexFieldDoesNotBlock":  "injects controllertest.FakeInformer through Options.NewInformer; crcache ignores NewInformer",
}

// skippedSpecs are ginkgo specs skipped for the same reason, by a
// substring of their full text.
var skippedSpecs = map[string]string{}

// compactSkips are the specs that assert a caller's change to an object
// read with UnsafeDisableDeepCopy reaches the cache: compact storage holds
// encodings, so reads are always fresh objects (docs/CONTROLLER-RUNTIME.md).
var compactSkips = map[string]string{
	"should not deep copy the object if UnsafeDisableDeepCopy is enabled": "compact storage: reads are fresh decodes, a caller's change cannot reach the cache",
	"should be able to change object in informer cache":                   "compact storage: reads are fresh decodes, a caller's change cannot reach the cache",
}

func main() {
	apiserver := flag.String("apiserver", "", "kube-apiserver binary")
	etcd := flag.String("etcd", "", "etcd binary")
	modes := flag.String("mode", "default,compact", "crcache options to run under: default (zero Options), compact (compact storage without hot cache, label index)")
	race := flag.Bool("race", false, "run with the race detector")
	keep := flag.Bool("keep", false, "keep the copied tests (zz_upstream/) after the run")
	flag.Parse()
	if *apiserver == "" || *etcd == "" {
		fail(fmt.Errorf("-apiserver and -etcd are required"))
	}
	crDir, err := goOutput("list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/controller-runtime")
	if err != nil {
		fail(err)
	}
	root := "zz_upstream"
	if err := os.RemoveAll(root); err != nil {
		fail(err)
	}
	for _, s := range suites {
		if err := s.copy(crDir, filepath.Join(root, s.name)); err != nil {
			fail(err)
		}
	}
	ok := run(root, *modes, *apiserver, *etcd, *race)
	if !*keep {
		if err := os.RemoveAll(root); err != nil {
			fail(err)
		}
	}
	if !ok {
		os.Exit(1)
	}
}

// run copies and runs every suite in every mode; it reports whether all
// passed.
func run(root, modes, apiserver, etcd string, race bool) bool {
	ok := true
	for _, s := range suites {
		for _, mode := range strings.Split(modes, ",") {
			if !s.run(root, mode, apiserver, etcd, race) {
				ok = false
			}
		}
	}
	return ok
}

// newCall is controller-runtime's constructor as the tests call it (and
// pass it): \b keeps cache.NewCacheFunc and the like untouched.
var newCall = regexp.MustCompile(`\bcache\.New\b`)

func (s suite) copy(crDir, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	var pkgName string
	for _, f := range s.files {
		src, err := os.ReadFile(filepath.Join(crDir, s.pkg, f))
		if err != nil {
			return err
		}
		if m := regexp.MustCompile(`(?m)^package (\w+)`).FindSubmatch(src); m != nil {
			pkgName = string(m[1])
		}
		out := newCall.ReplaceAll(src, []byte("crcacheUnderTest"))
		if err := os.WriteFile(filepath.Join(dst, f), out, 0o644); err != nil {
			return err
		}
	}
	for _, d := range s.dirs {
		if err := exec.Command("cp", "-r", filepath.Join(crDir, s.pkg, d), dst).Run(); err != nil {
			return fmt.Errorf("copy %s: %w", d, err)
		}
		if err := exec.Command("chmod", "-R", "u+w", filepath.Join(dst, d)).Run(); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dst, "zz_crcache_test.go"), fmt.Appendf(nil, swapFile, pkgName), 0o644)
}

// swapFile defines the constructor the rewritten calls use.
const swapFile = `package %s

import (
	"os"

	oicache "github.com/openinformer/cache"
	crcache "github.com/openinformer/cache/controllerruntime"
)

// crcacheUnderTest replaces controller-runtime's cache.New.
var crcacheUnderTest = crcache.New(underTestOptions())

func underTestOptions() crcache.Options {
	if os.Getenv("CRCACHE_MODE") == "compact" {
		return crcache.Options{Defaults: crcache.InformerOptions{Compact: &oicache.CompactOptions{}}}
	}
	return crcache.Options{}
}
`

func (s suite) run(root, mode, apiserver, etcd string, race bool) bool {
	fmt.Printf("=== controller-runtime v0.25.3 %s tests against crcache, mode %s\n", s.pkg, mode)
	for f, why := range s.dropped {
		fmt.Printf("    not run: %s: %s\n", f, why)
	}
	report, _ := filepath.Abs(filepath.Join(root, s.name+"-"+mode+".json"))
	skips := make([]string, 0, len(skipped))
	for name := range skipped {
		skips = append(skips, "^"+name+"$")
	}
	sort.Strings(skips)
	args := []string{"test", "-count=1", "-timeout=30m", "-v", "-skip", strings.Join(skips, "|")}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "./"+filepath.Join(root, s.name), "-args", "-ginkgo.json-report="+report)
	for spec := range skippedSpecs {
		args = append(args, "-ginkgo.skip="+regexp.QuoteMeta(spec))
	}
	if mode == "compact" {
		for spec, why := range compactSkips {
			args = append(args, "-ginkgo.skip="+regexp.QuoteMeta(spec))
			skippedSpecs[spec] = why
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "TEST_ASSET_KUBE_APISERVER="+abs(apiserver), "TEST_ASSET_ETCD="+abs(etcd), "CRCACHE_MODE="+mode)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	summarize(out.Bytes(), report)
	if err != nil {
		fmt.Printf("FAIL %s (%s): %v; go test's output follows\n%s\n", s.pkg, mode, err, tail(out.String(), 200))
		return false
	}
	fmt.Printf("ok   %s (%s)\n", s.pkg, mode)
	return true
}

// specReport is the part of ginkgo's JSON report printed here.
type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeText            string
	LeafNodeType            string
	State                   string
	Failure                 struct{ Message string }
}

// summarize prints each plain Go test's and each spec's result.
func summarize(out []byte, report string) {
	for _, m := range regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): (\S+)`).FindAllSubmatch(out, -1) {
		fmt.Printf("    %s %s\n", m[1], m[2])
	}
	for name, why := range skipped {
		fmt.Printf("    SKIP %s: %s\n", name, why)
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		fmt.Printf("    no ginkgo report: %v\n", err)
		return
	}
	var reports []struct{ SpecReports []specReport }
	if err := json.Unmarshal(raw, &reports); err != nil {
		fmt.Printf("    unreadable ginkgo report: %v\n", err)
		return
	}
	counts := map[string]int{}
	for _, r := range reports {
		for _, sp := range r.SpecReports {
			if sp.LeafNodeType != "It" {
				if sp.State != "passed" {
					fmt.Printf("    %s %s: %s\n", strings.ToUpper(sp.State), sp.LeafNodeType, firstLine(sp.Failure.Message))
				}
				continue
			}
			counts[sp.State]++
			name := strings.Join(append(sp.ContainerHierarchyTexts, sp.LeafNodeText), " / ")
			switch sp.State {
			case "passed":
			case "skipped":
				fmt.Printf("    SKIP spec %s: %s\n", name, skippedSpecs[sp.LeafNodeText])
			default:
				fmt.Printf("    %s spec %s: %s\n", strings.ToUpper(sp.State), name, firstLine(sp.Failure.Message))
			}
		}
	}
	fmt.Printf("    specs: %v\n", counts)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

func goOutput(args ...string) (string, error) {
	out, err := exec.Command("go", args...).Output()
	return strings.TrimSpace(string(out)), err
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "upstream:", err)
	os.Exit(2)
}
