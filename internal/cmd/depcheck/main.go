// Command depcheck verifies that swapping client-go's tools/cache for this
// module moves no other module in a user's build: it builds two throwaway
// modules, one importing k8s.io/client-go/tools/cache and one importing this
// module (replaced by the checkout), and fails if any module present in both
// module graphs is selected at a different version.
//
// The graphs come from `go list -m all`, which includes every requirement of
// this module's go.mod, test-only ones too: that is what a user's module
// inherits, whatever the library's own packages import.
//
// With -client-go the user requires that client-go version besides this
// module (a user on the next minor, whose client-go outranks the one this
// go.mod requires); both graphs then start from it.
//
// Usage: go run ./internal/cmd/depcheck [-dir MODULEROOT] [-client-go VERSION]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

const clientGo = "k8s.io/client-go"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("depcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "root of the module to check")
	clientGoVersion := fs.String("client-go", "", "client-go version the user requires (default: the one -dir's go.mod requires)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	diffs, err := check(*dir, *clientGoVersion)
	if err != nil {
		fmt.Fprintln(stderr, "depcheck:", err)
		return 2
	}
	for _, d := range diffs {
		fmt.Fprintln(stdout, d)
	}
	if len(diffs) > 0 {
		fmt.Fprintf(stdout, "depcheck: %d module(s) move when a user swaps the import\n", len(diffs))
		return 1
	}
	fmt.Fprintln(stdout, "depcheck: no module moves when a user swaps the import")
	return 0
}

// check returns one line per module selected at another version, for a
// user requiring client-go at clientGoVersion ("": as dir's go.mod does).
func check(dir, clientGoVersion string) ([]string, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	self, err := goListModule(root, "")
	if err != nil {
		return nil, err
	}
	if clientGoVersion == "" {
		ref, err := goListModule(root, clientGo)
		if err != nil {
			return nil, err
		}
		clientGoVersion = ref.Version
	}
	userClientGo := clientGo + " " + clientGoVersion
	theirs, err := userGraph([]string{userClientGo}, clientGo+"/tools/cache", "")
	if err != nil {
		return nil, fmt.Errorf("module requiring %s: %w", clientGo, err)
	}
	ours, err := userGraph([]string{self.Path + " v0.0.0", userClientGo}, self.Path, root)
	if err != nil {
		return nil, fmt.Errorf("module requiring %s: %w", self.Path, err)
	}
	return compare(theirs, ours), nil
}

// compare lists the modules both graphs select, at different versions.
func compare(theirs, ours map[string]string) []string {
	var diffs []string
	for path, want := range theirs {
		if have, ok := ours[path]; ok && have != want {
			diffs = append(diffs, fmt.Sprintf("%s: %s with client-go, %s with openinformer", path, want, have))
		}
	}
	sort.Strings(diffs)
	return diffs
}

type module struct{ Path, Version string }

// goListModule describes the main module (path "") or one it requires.
func goListModule(dir, path string) (module, error) {
	args := []string{"list", "-m", "-json"}
	if path != "" {
		args = append(args, path)
	}
	out, err := goCmd(dir, args...)
	if err != nil {
		return module{}, err
	}
	var m module
	return m, json.Unmarshal(out, &m)
}

// userGraph creates a throwaway module that requires reqs ("path version"),
// imports pkg and, when replaceDir is set, replaces the first required
// module with that directory; it returns the versions `go list -m all`
// selects there.
func userGraph(reqs []string, pkg, replaceDir string) (map[string]string, error) {
	tmp, err := os.MkdirTemp("", "depcheck-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	reqPath, _, _ := strings.Cut(reqs[0], " ")
	gomod := "module example.com/user\n\ngo 1.26.0\n\nrequire (\n\t" + strings.Join(reqs, "\n\t") + "\n)\n"
	if replaceDir != "" {
		gomod += "\nreplace " + reqPath + " => " + replaceDir + "\n"
	}
	main := "package main\n\nimport _ \"" + pkg + "\"\n\nfunc main() {}\n"
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte(gomod), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "main.go"), []byte(main), 0o644); err != nil {
		return nil, err
	}
	if _, err := goCmd(tmp, "mod", "tidy"); err != nil {
		return nil, err
	}
	out, err := goCmd(tmp, "list", "-m", "all")
	if err != nil {
		return nil, err
	}
	return parseModules(out), nil
}

// parseModules reads `go list -m all` lines ("path version [=> ...]"),
// skipping the main module, which has no version.
func parseModules(out []byte) map[string]string {
	mods := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 {
			mods[f[0]] = f[1]
		}
	}
	return mods
}

// goCmd runs the go command in dir outside any workspace, so that only the
// go.mod files decide, as they do for a user.
func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
