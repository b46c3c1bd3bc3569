// Command apicheck compares the exported API of a package with a reference
// package, by default client-go's tools/cache as this module requires it:
// every exported constant, variable, function and type must exist with the
// same kind and the same type or signature (an alias counts as the type it
// names), and so must every exported method (of T and *T, promoted ones
// included; a value-receiver method must not move to the pointer) and every
// exported struct field. Parameter names, struct tags and behaviour are not
// compared.
//
// Both packages are read from the compiler's export data (`go list
// -export`), so only the go command is needed. With -ref-version the
// reference is loaded at another version, from a throwaway module that
// requires it; "newest" picks the newest version the module proxy serves,
// pre-releases included, to see what a coming client-go adds. With -modfile
// both packages are built from that go.mod instead of -dir's own, as
// `make api-next` does with go.next.mod.
//
// Usage:
//
//	go run ./internal/cmd/apicheck [-ref IMPORTPATH] [-pkg .] [-modfile go.next.mod] [-ref-version V|newest] [-skip REGEXP] [-min PERCENT]
//
// It prints one MISSING or MISMATCH line per incompatible identifier and a
// summary line; it exits 1 when fewer than -min percent are compatible and
// 2 when something cannot be loaded.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"
)

// options are the command-line settings.
type options struct {
	dir, modfile, ref, refModule, refVersion, pkg string
	skip                                          *regexp.Regexp
	min                                           float64
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "apicheck:", err)
		return 2
	}
	ref, tgt, err := load(opts)
	if err != nil {
		fmt.Fprintln(stderr, "apicheck:", err)
		return 2
	}
	fmt.Fprintf(stderr, "apicheck: reference %s (%s), target %s (%s)\n", ref.pkg.Path(), ref.module, tgt.pkg.Path(), tgt.module)
	compatible, total := 0, 0
	for _, f := range compareAPI(ref.pkg, tgt.pkg, opts.skip) {
		total++
		if f.ok() {
			compatible++
			continue
		}
		fmt.Fprintln(stdout, f)
	}
	permille := 1000
	if total > 0 {
		permille = 1000 * compatible / total // rounded down: 100.0% means all of it
	}
	fmt.Fprintf(stdout, "api: %d/%d identifiers compatible (%d.%d%%)\n", compatible, total, permille/10, permille%10)
	if float64(permille)/10 < opts.min {
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("apicheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.dir, "dir", ".", "root of the module whose build list resolves both packages")
	fs.StringVar(&o.modfile, "modfile", "", "go.mod file to build -dir with instead of its own (go.next.mod: the next client-go minor)")
	fs.StringVar(&o.ref, "ref", "k8s.io/client-go/tools/cache", "import path of the reference package")
	fs.StringVar(&o.refModule, "ref-module", "k8s.io/client-go", "module of the reference package, for -ref-version")
	fs.StringVar(&o.refVersion, "ref-version", "", "load the reference at this version (or newest) instead of the one -dir requires")
	fs.StringVar(&o.pkg, "pkg", ".", "target package: a directory under -dir (., ./sub) or an import path")
	skip := fs.String("skip", "", "regexp of identifiers to leave out, matched against Name and Type.Member")
	fs.Float64Var(&o.min, "min", 0, "fail unless at least this percentage is compatible")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	o.skip, err = regexp.Compile(*skip)
	return o, err
}

// load type-checks the reference and the target package.
func load(o options) (ref, tgt loaded, err error) {
	if o.refVersion == "" {
		pkgs, err := loadPackages(o.dir, o.modfile, o.ref, o.pkg)
		if err != nil {
			return ref, tgt, err
		}
		return pkgs[0], pkgs[1], nil
	}
	tmp, err := referenceModule(o)
	defer os.RemoveAll(tmp)
	if err != nil {
		return ref, tgt, err
	}
	refs, err := loadPackages(tmp, "", o.ref)
	if err != nil {
		return ref, tgt, err
	}
	tgts, err := loadPackages(o.dir, o.modfile, o.pkg)
	if err != nil {
		return ref, tgt, err
	}
	return refs[0], tgts[0], nil
}

// referenceModule builds the throwaway module that requires the reference
// at -ref-version. For "newest" it walks back from the newest version the
// module proxy lists (pre-releases included) past those that need a newer
// Go than this toolchain, saying so for each.
func referenceModule(o options) (string, error) {
	if o.refVersion != "newest" {
		return moduleRequiring(o.refModule, o.refVersion, o.ref)
	}
	out, err := goCmd(o.dir, "list", "-m", "-versions", o.refModule)
	if err != nil {
		return "", err
	}
	versions := strings.Fields(string(out))[1:]
	for i := len(versions) - 1; i >= 0; i-- {
		tmp, err := moduleRequiring(o.refModule, versions[i], o.ref)
		if err == nil || !strings.Contains(err.Error(), "requires go >=") {
			return tmp, err
		}
		os.RemoveAll(tmp)
		fmt.Fprintf(os.Stderr, "apicheck: skipping %s %s: it needs a newer Go than %s\n", o.refModule, versions[i], runtime.Version())
	}
	return "", fmt.Errorf("no version of %s builds with %s", o.refModule, runtime.Version())
}
