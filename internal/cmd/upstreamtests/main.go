// Command upstreamtests runs client-go's own tests for a package against
// openinformer's counterpart. It copies the test files from the module
// cache (client-go's code is never committed here) into a throwaway
// directory inside this module, rewrites their imports of client-go's
// packages to ours, and runs them:
//
//   - external tests (package x_test) run alone against our package;
//   - internal tests (package x) run in a copy of our package's non-test
//     files, so they see its unexported identifiers under client-go's
//     names where those exist.
//
// A test file that does not compile against ours (it uses an unexported
// client-go identifier we do not have, say) is dropped and reported with
// its first error; the rest run. The run fails if a test fails, or, with
// -strict, if a file was dropped.
//
// Usage:
//
//	go run ./internal/cmd/upstreamtests [-modfile go.next.mod] [-tags clientgo_v038] [-race] [-run REGEXP] [-strict] [client-go-dir=our-dir ...]
//
// Against client-go v0.38.0-beta.0 (make upstream-tests-next), 10 of the
// 29 tools/cache test files compile against ours and pass; README
// "Versions and support" lists the other 19 with the unexported client-go
// identifier each needs (a lock field, say), which this tool prints as it
// drops them. Files that define helpers for others (fifo_test.go,
// reflector_test.go, controller_test.go) take those others with them.
//
// The default packages are dynamic/dynamicinformer=./dynamicinformer and
// metadata/metadatainformer=./metadatainformer; tools/cache=. runs
// client-go's tools/cache tests against the root package.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/openinformer/cache/internal/cmd/modcache"
	"github.com/openinformer/cache/internal/importmap"
)

func main() {
	modfile := flag.String("modfile", "", "alternative go.mod (e.g. go.next.mod for the next client-go)")
	race := flag.Bool("race", false, "run the tests with the race detector")
	run := flag.String("run", "", "run only the tests matching this regexp")
	strict := flag.Bool("strict", false, "fail when a test file had to be dropped")
	tags := flag.String("tags", "", "build tags (clientgo_v038 with go.next.mod)")
	flag.Parse()
	specs := flag.Args()
	if len(specs) == 0 {
		specs = []string{"dynamic/dynamicinformer=./dynamicinformer", "metadata/metadatainformer=./metadatainformer"}
	}
	for _, spec := range specs {
		if !strings.Contains(spec, "=") {
			fatal(fmt.Errorf("%q: want client-go-dir=our-dir", spec))
		}
	}
	r, err := newRunner(*modfile, *tags)
	if err != nil {
		fatal(err)
	}
	defer r.cleanup()
	failed := false
	for _, spec := range specs {
		upstream, ours, _ := strings.Cut(spec, "=")
		dropped, err := r.runPackage(upstream, ours, *race, *run)
		if err != nil {
			fmt.Fprintf(os.Stderr, "FAIL %s: %v\n", upstream, err)
			failed = true
		}
		if dropped > 0 && *strict {
			failed = true
		}
	}
	if failed {
		r.cleanup()
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "upstreamtests:", err)
	os.Exit(2)
}

// runner holds the module-wide settings of one run.
type runner struct {
	root     string // this module's directory
	clientGo string // client-go's directory in the module cache
	modfile  string // temporary go.mod: ours plus client-go's requirements
	work     string // throwaway directory inside the module
	tags     string // build tags for every go test
}

func newRunner(modfile, tags string) (*runner, error) {
	root, err := modcache.GoOutput("", "list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return nil, err
	}
	if modfile == "" {
		modfile = filepath.Join(root, "go.mod")
	}
	modfile, _ = filepath.Abs(modfile)
	clientGo, _, err := modcache.Dir(root, modfile, "k8s.io/client-go")
	if err != nil {
		return nil, err
	}
	// An underscore directory is outside ./... patterns, so a concurrent
	// build of the module never sees the copies.
	work, err := os.MkdirTemp(root, "_upstreamtests")
	if err != nil {
		return nil, err
	}
	r := &runner{root: root, clientGo: clientGo, work: work, tags: tags}
	r.modfile, err = r.testModfile(modfile)
	if err != nil {
		r.cleanup()
		return nil, err
	}
	return r, nil
}

func (r *runner) cleanup() { os.RemoveAll(r.work) }

// testModfile copies modfile and its go.sum and adds client-go's own
// requirements (go-cmp, say), which client-go's tests import. They are
// already in the build list at these versions or newer, so nothing our
// tests run against changes.
func (r *runner) testModfile(modfile string) (string, error) {
	dst := filepath.Join(r.work, "test.mod")
	for _, f := range [][2]string{{modfile, dst}, {strings.TrimSuffix(modfile, ".mod") + ".sum", strings.TrimSuffix(dst, ".mod") + ".sum"}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(f[1], b, 0o644); err != nil {
			return "", err
		}
	}
	reqs, err := requirements(filepath.Join(r.clientGo, "go.mod"))
	if err != nil {
		return "", err
	}
	args := []string{"mod", "edit", "-modfile", dst}
	for _, req := range reqs {
		args = append(args, "-require="+req)
	}
	_, err = modcache.GoOutput(r.root, args...)
	return dst, err
}

// requirements lists the "path@version" requirements of a go.mod file.
func requirements(gomod string) ([]string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return nil, err
	}
	var reqs []string
	inBlock := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(strings.TrimSpace(line))
		switch {
		case len(f) >= 2 && f[0] == "require" && f[1] == "(":
			inBlock = true
		case inBlock && len(f) >= 1 && f[0] == ")":
			inBlock = false
		case inBlock && len(f) >= 2:
			reqs = append(reqs, f[0]+"@"+f[1])
		case len(f) >= 3 && f[0] == "require":
			reqs = append(reqs, f[1]+"@"+f[2])
		}
	}
	return reqs, nil
}

// runPackage copies client-go's tests for upstream next to (a copy of) our
// package ours, drops what does not compile and runs the rest. It returns
// how many test files it dropped.
func (r *runner) runPackage(upstream, ours string, race bool, run string) (int, error) {
	src := filepath.Join(r.clientGo, upstream)
	dir := filepath.Join(r.work, strings.ReplaceAll(upstream, "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	tests, internal, err := copyTests(src, dir)
	if err != nil {
		return 0, err
	}
	if len(tests) == 0 {
		return 0, fmt.Errorf("no test files in %s", src)
	}
	if internal {
		if err := copyPackage(filepath.Join(r.root, ours), dir); err != nil {
			return 0, err
		}
	}
	pkg := "./" + mustRel(r.root, dir)
	dropped := r.dropUncompilable(pkg, dir, tests)
	fmt.Printf("== %s: %d of %d client-go test files compile against %s\n", upstream, len(tests)-len(dropped), len(tests), ours)
	for _, name := range sortedKeys(dropped) {
		fmt.Printf("   dropped %s: %s\n", name, dropped[name])
	}
	if len(dropped) == len(tests) {
		return len(dropped), errors.New("no test file compiles")
	}
	args := append(r.testArgs(), "-count=1")
	if race {
		args = append(args, "-race")
	}
	if run != "" {
		args = append(args, "-run", run)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = r.root, os.Stdout, os.Stderr
	return len(dropped), cmd.Run()
}

// copyTests copies src's test files (and testdata) into dir with their
// imports rewritten, returning their names and whether they are internal.
func copyTests(src, dir string) (tests []string, internal bool, err error) {
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, false, err
	}
	for _, e := range entries {
		name := e.Name()
		if name == "testdata" && e.IsDir() {
			if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(filepath.Join(src, name))); err != nil {
				return nil, false, err
			}
			continue
		}
		if e.IsDir() || !strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return nil, false, err
		}
		if !externalTest(b) {
			internal = true
		}
		b, _, err = importmap.Rewrite(name, b, importmap.Paths)
		if err != nil {
			return nil, false, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, false, err
		}
		tests = append(tests, name)
	}
	return tests, internal, nil
}

var packageClause = regexp.MustCompile(`(?m)^package\s+(\w+)`)

func externalTest(src []byte) bool {
	m := packageClause.FindSubmatch(src)
	return m != nil && bytes.HasSuffix(m[1], []byte("_test"))
}

// copyPackage copies our package's non-test Go files into dir.
func copyPackage(ours, dir string) error {
	entries, err := os.ReadDir(ours)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(ours, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

var compileError = regexp.MustCompile(`^(?:\./)?(?:.*/)?([^/\s]+_test\.go):\d+:\d+: (.*)$`)

// dropUncompilable compiles the test binary, removes every test file the
// compiler complains about, and repeats until it compiles; it returns the
// removed files with their first error.
func (r *runner) dropUncompilable(pkg, dir string, tests []string) map[string]string {
	dropped := map[string]string{}
	for len(dropped) < len(tests) {
		cmd := exec.Command("go", append(r.testArgs(), "-count=1", "-run", "^$", pkg)...)
		cmd.Dir = r.root
		out, err := cmd.CombinedOutput()
		if err == nil {
			return dropped
		}
		bad := map[string]string{}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if m := compileError.FindStringSubmatch(sc.Text()); m != nil {
				if _, ok := bad[m[1]]; !ok {
					bad[m[1]] = m[2]
				}
			}
		}
		if len(bad) == 0 {
			dropped["(all)"] = strings.TrimSpace(string(out))
			return dropped
		}
		for name, why := range bad {
			dropped[name] = why
			os.Remove(filepath.Join(dir, name))
		}
	}
	return dropped
}

// testArgs starts a go test command line with the run's module file and tags.
func (r *runner) testArgs() []string {
	args := []string{"test", "-modfile", r.modfile, "-mod=mod"}
	if r.tags != "" {
		args = append(args, "-tags", r.tags)
	}
	return args
}

func mustRel(base, target string) string {
	rel, err := filepath.Rel(base, target)
	if err != nil {
		panic(err) // both are absolute paths under the module
	}
	return filepath.ToSlash(rel)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
