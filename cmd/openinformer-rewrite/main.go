// Command openinformer-rewrite swaps client-go's informer imports for
// openinformer's in Go source: k8s.io/client-go/tools/cache becomes
// github.com/openinformer/cache, and client-go's informers,
// dynamic/dynamicinformer and metadata/metadatainformer factories become
// openinformer's (same package names, so no other line changes). Run it in
// a module that requires github.com/openinformer/cache (README, Install),
// then go mod tidy:
//
//	go run github.com/openinformer/cache/cmd/openinformer-rewrite ./...
//
// Arguments are package patterns as the go command takes them; every .go
// file of the matched packages, tests included, is rewritten in place. -l
// only lists the files that would change and -check exits 1 if there are
// any (for CI, after generation). -cache-only rewrites tools/cache alone.
//
// Besides the imports it changes what would otherwise stop compiling or
// stay client-go's:
//
//   - Code informer-gen generated for your own resources: its factory gets
//     openinformer's options (WithInformerOptions, WithSnapshots, WithShard
//     and, unless client-go v0.38's informer-gen gave it one,
//     WithShardSelector) in a file openinformer.go beside it, and its
//     constructors build with them (see package informers/genfactory). Run
//     it after every generation, and with -check in CI.
//   - Watch error handlers: a signature taking *cache.Reflector and an error
//     keeps client-go's Reflector, imported as clientcache.
//   - Calls of client-go's generated per-resource constructors
//     (coreinformers.NewPodInformer and the like) build client-go's
//     informers whatever the imports; each is printed. One that passes an
//     InformerName would no longer compile after the swap, so the command
//     then writes nothing and prints each such line with what to do.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/openinformer/cache/internal/importmap"
)

// module is openinformer's module path, which rewritten code imports.
const module = "github.com/openinformer/cache"

func main() {
	list := flag.Bool("l", false, "list the files that would change; change nothing")
	check := flag.Bool("check", false, "like -l, and exit 1 if any file would change")
	cacheOnly := flag.Bool("cache-only", false, "rewrite k8s.io/client-go/tools/cache only, not the factories")
	flag.Parse()
	paths := importmap.Paths
	if *cacheOnly {
		paths = map[string]string{"k8s.io/client-go/tools/cache": importmap.Paths["k8s.io/client-go/tools/cache"]}
	}
	changed, err := run(flag.Args(), paths, *list || *check, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "openinformer-rewrite:", err)
		os.Exit(2)
	}
	if *check && changed > 0 {
		os.Exit(1)
	}
}

// rewrite is one file's new content.
type rewrite struct {
	file string
	src  []byte
	mode os.FileMode
}

// run rewrites (or, with dryRun, lists) the files of the packages patterns
// match, printing each changed file's name, and returns how many changed.
// It writes nothing when a file would no longer compile after the swap
// (see clientGoConstructors); the error then names each such line. Notes
// (informers that stay client-go's, informer-gen output too old for the
// factory options) go to notes.
func run(patterns []string, paths map[string]string, dryRun bool, out, notes io.Writer) (int, error) {
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	if err := requiresOpenInformer(); err != nil {
		return 0, err
	}
	dirs, err := packageDirs(patterns)
	if err != nil {
		return 0, err
	}
	var rewrites []rewrite
	var conflicts []string
	for _, dir := range dirs {
		rs, found, err := rewriteDir(dir, paths)
		if err != nil {
			return 0, err
		}
		rewrites = append(rewrites, rs...)
		for _, f := range found {
			if f.conflict {
				conflicts = append(conflicts, f.String())
			} else {
				fmt.Fprintln(notes, f)
			}
		}
	}
	if len(conflicts) > 0 {
		return 0, fmt.Errorf("nothing rewritten: %d line(s) would not compile after the swap; change them first:\n%s", len(conflicts), strings.Join(conflicts, "\n"))
	}
	for _, r := range rewrites {
		fmt.Fprintln(out, r.file)
		if !dryRun {
			if err := os.WriteFile(r.file, r.src, r.mode); err != nil {
				return 0, err
			}
		}
	}
	if len(rewrites) > 0 && !dryRun {
		fmt.Fprintf(notes, "rewrote %d files; now run go mod tidy and go build ./...\n", len(rewrites))
	}
	return len(rewrites), nil
}

// requiresOpenInformer fails, saying what to do, unless the module in the
// current directory requires openinformer: the rewritten code would not
// build.
func requiresOpenInformer() error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).CombinedOutput()
	if err == nil && strings.TrimSpace(string(out)) != "" {
		return nil
	}
	return fmt.Errorf("the module in this directory does not require %s (go list -m: %s).\n"+
		"No release is tagged yet (go get answers 403), so require it from a clone of the repository, then run this command again and go mod tidy after it:\n"+
		"\tgo mod edit -require=%s@v0.0.0 -replace=%s=/path/to/openinformer",
		module, strings.TrimSpace(string(out)), module, module)
}

// packageDirs asks the go command for the directories of the packages
// patterns match; build errors in those packages do not matter here.
func packageDirs(patterns []string) ([]string, error) {
	cmd := exec.Command("go", append([]string{"list", "-e", "-f", "{{.Dir}}"}, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v: %s(run this command in the module that holds the packages)", strings.Join(patterns, " "), err, stderr.String())
	}
	return strings.Fields(string(b)), nil
}

// rewriteDir returns the files of dir that change, the generated factory
// options file included when dir holds informer-gen's factory or
// internalinterfaces, and the calls of client-go's generated constructors.
func rewriteDir(dir string, paths map[string]string) ([]rewrite, []finding, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, nil, err
	}
	var rewrites []rewrite
	var found []finding
	var gen genPackage
	for _, file := range files {
		r, pkg, f, err := rewriteFile(file, paths)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		if r != nil {
			rewrites = append(rewrites, *r)
		}
		found = append(found, f...)
		gen = merge(gen, pkg)
	}
	if gen.Old {
		found = append(found, finding{pos: token.Position{Filename: dir}, call: "informer-gen output older than k8s.io/code-generator v0.37 (no InformerOptions): its imports are swapped, but its factory gets openinformer's options (WithInformerOptions, WithSnapshots, WithShard) only once regenerated with code-generator v0.37 or later"})
	}
	if (gen.Factory || gen.Internal) && !gen.Old {
		r, err := ensureFile(filepath.Join(dir, optionsFile), optionsSource(gen))
		if r != nil {
			rewrites = append(rewrites, *r)
		}
		return rewrites, found, err
	}
	return rewrites, found, nil
}

func merge(a, b genPackage) genPackage {
	if b.Name != "" {
		a.Name = b.Name
	}
	a.Factory = a.Factory || b.Factory
	a.HasShardSelector = a.HasShardSelector || b.HasShardSelector
	a.Internal = a.Internal || b.Internal
	a.Old = a.Old || b.Old
	return a
}

// ensureFile returns the rewrite that makes file hold src, nil if it does.
func ensureFile(file string, src []byte) (*rewrite, error) {
	old, err := os.ReadFile(file)
	if err == nil && bytes.Equal(old, src) {
		return nil, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return &rewrite{file: file, src: src, mode: 0o644}, nil
}

// rewriteFile returns file's rewrite (nil when nothing changes), what it
// says about an informer-gen package, and its calls of client-go's
// generated constructors.
func rewriteFile(file string, paths map[string]string) (*rewrite, genPackage, []finding, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, genPackage{}, nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, genPackage{}, nil, err
	}
	found := clientGoConstructors(fset, f)
	edited, pkg, err := addFactoryOptions(file, src)
	if err != nil {
		return nil, pkg, nil, err
	}
	dst, changed, err := importmap.Rewrite(file, edited, paths)
	if err != nil || (!changed && bytes.Equal(edited, src)) {
		return nil, pkg, found, err
	}
	if cacheName := importName(f, func(p string) bool { return p == clientGoCache }); changed && cacheName != "" && paths[clientGoCache] != "" {
		if dst, err = watchErrorHandlers(file, dst, cacheName); err != nil {
			return nil, pkg, nil, err
		}
	}
	if dst, err = format.Source(dst); err != nil {
		return nil, pkg, nil, err
	}
	info, err := os.Stat(file)
	if err != nil {
		return nil, pkg, nil, err
	}
	return &rewrite{file: file, src: dst, mode: info.Mode()}, pkg, found, nil
}
