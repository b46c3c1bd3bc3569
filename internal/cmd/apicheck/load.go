package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// listed is the part of `go list -json` output the loader needs.
type listed struct {
	ImportPath string
	Export     string
	Module     *struct{ Path, Version string }
	Error      *struct{ Err string }
}

// loaded is a type-checked package and the module it came from.
type loaded struct {
	pkg    *types.Package
	module string // "path version", or just the path for the main module
}

// loadPackages type-checks the named packages as the module in dir builds
// them, with modfile instead of its go.mod unless modfile is "". It reads
// the compiler's export data, which `go list -export` builds or takes from
// the build cache, so nothing is type-checked from source.
func loadPackages(dir, modfile string, patterns ...string) ([]loaded, error) {
	args := []string{"list", "-e", "-export", "-deps", "-json=ImportPath,Export,Module,Error"}
	if modfile != "" {
		args = append(args, "-modfile="+modfile)
	}
	args = append(args, patterns...)
	out, err := goCmd(dir, args...)
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	modules := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if p.Error != nil {
			return nil, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil {
			modules[p.ImportPath] = strings.TrimSpace(p.Module.Path + " " + p.Module.Version)
		}
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", lookup).(types.ImporterFrom)
	var pkgs []loaded
	for _, path := range patterns {
		path, err := resolvePattern(dir, path)
		if err != nil {
			return nil, err
		}
		pkg, err := imp.ImportFrom(path, dir, 0)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, loaded{pkg: pkg, module: modules[path]})
	}
	return pkgs, nil
}

// resolvePattern turns a relative package directory ("." or "./sub") into
// its import path; import paths are returned as they are.
func resolvePattern(dir, pattern string) (string, error) {
	if pattern != "." && !strings.HasPrefix(pattern, "./") {
		return pattern, nil
	}
	out, err := goCmd(dir, "list", "-f", "{{.ImportPath}}", pattern)
	return strings.TrimSpace(string(out)), err
}

// moduleRequiring creates a throwaway module that requires mod at version
// and imports pkg, so that pkg can be loaded as that version builds it.
// The caller removes the returned directory.
func moduleRequiring(mod, version, pkg string) (string, error) {
	dir, err := os.MkdirTemp("", "apicheck-")
	if err != nil {
		return "", err
	}
	files := map[string]string{
		"go.mod":  "module example.com/apicheck\n\ngo 1.26.0\n",
		"main.go": "package main\n\nimport _ \"" + pkg + "\"\n\nfunc main() {}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return dir, err
		}
	}
	if _, err := goCmd(dir, "get", mod+"@"+version); err != nil {
		return dir, err
	}
	_, err = goCmd(dir, "mod", "tidy")
	return dir, err
}

// goCmd runs the go command in dir outside any workspace.
func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("go %s", strings.Join(args, " ")), err, errors.New(strings.TrimSpace(stderr.String())))
	}
	return out, nil
}
