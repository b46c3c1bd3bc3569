// Command pathfiles measures which files of the root package one watch
// MODIFIED passes on its way to a handler's OnUpdate (issue 38's "files per
// path"): it builds itself with coverage of the module's packages, runs
// that build's driver (an informer on a fake server, synced, with coverage
// counters cleared just before the event; drive.go), then counts the
// files and functions with a statement that ran. Run it from the module
// root:
//
//	go run ./internal/cmd/pathfiles
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

const module = "github.com/openinformer/cache"

func main() {
	drive := flag.String("drive", "", "run the path and write its coverage counters to this directory (used by the measuring run)")
	flag.Parse()
	if *drive != "" {
		if err := drivePath(*drive); err != nil {
			fmt.Fprintln(os.Stderr, "pathfiles:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pathfiles:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "pathfiles")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "pathfiles")
	build := exec.Command("go", "build", "-cover", "-covermode=atomic", "-coverpkg="+module+"/...", "-o", bin, "./internal/cmd/pathfiles")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build: %v", err)
	}
	counters := filepath.Join(dir, "counters")
	if err := os.Mkdir(counters, 0o700); err != nil {
		return err
	}
	drive := exec.Command(bin, "-drive", counters)
	drive.Env = append(os.Environ(), "GOCOVERDIR="+filepath.Join(dir))
	drive.Stdout, drive.Stderr = os.Stdout, os.Stderr
	if err := drive.Run(); err != nil {
		return fmt.Errorf("drive: %v", err)
	}
	dir = counters
	text, err := exec.Command("go", "tool", "covdata", "textfmt", "-i="+dir, "-o=/dev/stdout").Output()
	if err != nil {
		return fmt.Errorf("covdata textfmt: %v", err)
	}
	funcs, err := exec.Command("go", "tool", "covdata", "func", "-i="+dir).Output()
	if err != nil {
		return fmt.Errorf("covdata func: %v", err)
	}
	report(ranFiles(text), ranFuncs(funcs))
	return nil
}

// ranFiles returns the files with a block that ran, from covdata's text
// format ("file:start,end statements count").
func ranFiles(text []byte) map[string]bool {
	files := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		file, rest, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "mode:") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 3 && fields[2] != "0" {
			files[file] = true
		}
	}
	return files
}

// ranFuncs returns the functions covered at all, from covdata's func
// report ("file:line: name percent%").
func ranFuncs(report []byte) map[string]bool {
	funcs := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(report))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[2] != "0.0%" {
			funcs[fields[0]+" "+fields[1]] = true
		}
	}
	return funcs
}

// report prints the files that ran, the root package's apart, and the
// functions per package.
func report(files, funcs map[string]bool) {
	byPkg := map[string][]string{}
	for f := range files {
		byPkg[path.Dir(f)] = append(byPkg[path.Dir(f)], path.Base(f))
	}
	pkgs := make([]string, 0, len(byPkg))
	for p := range byPkg {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	fnCount := map[string]int{}
	for fn := range funcs {
		file, _, _ := strings.Cut(fn, ":")
		fnCount[path.Dir(file)]++
	}
	for _, p := range pkgs {
		sort.Strings(byPkg[p])
		fmt.Printf("%s: %d files, %d functions: %s\n", p, len(byPkg[p]), fnCount[p], strings.Join(byPkg[p], " "))
	}
	fmt.Printf("root package: %d files, %d functions\n", len(byPkg[module]), fnCount[module])
}
