// Command openinformer-rewrite swaps client-go's informer imports for
// openinformer's in Go source: k8s.io/client-go/tools/cache becomes
// github.com/openinformer/cache, and client-go's informers,
// dynamic/dynamicinformer and metadata/metadatainformer factories become
// openinformer's (same package names, so no other line changes).
//
// Its main use is code generated for custom resources: informer-gen's
// output builds its informers with client-go's tools/cache, which no
// import swap elsewhere reaches. Run it after every generation:
//
//	go run github.com/openinformer/cache/cmd/openinformer-rewrite@latest ./pkg/generated/...
//
// Arguments are package patterns as the go command takes them (run it in
// the module that holds them); every .go file of the matched packages,
// tests included, is rewritten in place. -l only lists the files that
// would change and -check exits 1 if there are any (for CI, after
// generation). -cache-only rewrites tools/cache alone.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/openinformer/cache/internal/importmap"
)

func main() {
	list := flag.Bool("l", false, "list the files that would change; change nothing")
	check := flag.Bool("check", false, "like -l, and exit 1 if any file would change")
	cacheOnly := flag.Bool("cache-only", false, "rewrite k8s.io/client-go/tools/cache only, not the factories")
	flag.Parse()
	paths := importmap.Paths
	if *cacheOnly {
		paths = map[string]string{"k8s.io/client-go/tools/cache": importmap.Paths["k8s.io/client-go/tools/cache"]}
	}
	changed, err := run(flag.Args(), paths, *list || *check, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "openinformer-rewrite:", err)
		os.Exit(2)
	}
	if *check && changed > 0 {
		os.Exit(1)
	}
}

// run rewrites (or, with dryRun, lists) the files of the packages patterns
// match, printing each changed file's name, and returns how many changed.
func run(patterns []string, paths map[string]string, dryRun bool, out io.Writer) (int, error) {
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	dirs, err := packageDirs(patterns)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return changed, err
		}
		for _, file := range files {
			ok, err := rewriteFile(file, paths, dryRun)
			if err != nil {
				return changed, err
			}
			if ok {
				changed++
				fmt.Fprintln(out, file)
			}
		}
	}
	return changed, nil
}

// packageDirs asks the go command for the directories of the packages
// patterns match; build errors in those packages do not matter here.
func packageDirs(patterns []string) ([]string, error) {
	cmd := exec.Command("go", append([]string{"list", "-e", "-f", "{{.Dir}}"}, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v: %s", strings.Join(patterns, " "), err, stderr.String())
	}
	return strings.Fields(string(b)), nil
}

func rewriteFile(file string, paths map[string]string, dryRun bool) (bool, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return false, err
	}
	dst, changed, err := importmap.Rewrite(file, src, paths)
	if err != nil || !changed || dryRun {
		return changed, err
	}
	info, err := os.Stat(file)
	if err != nil {
		return false, err
	}
	return true, os.WriteFile(file, dst, info.Mode())
}
