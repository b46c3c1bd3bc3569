// Package modcache finds a required module's copy in the go command's
// module cache for the project's commands, downloading it first when the
// cache lacks it: a fresh machine has go.mod's modules only once something
// built with them, and go.next.mod's never.
package modcache

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// Dir is the directory and version of module as the module file modfile
// requires it (go.mod when empty), the go command run in dir (the current
// directory when empty).
func Dir(dir, modfile, module string) (moduleDir, version string, err error) {
	moduleDir, version, err = list(dir, modfile, module)
	if err != nil || moduleDir != "" {
		return moduleDir, version, err
	}
	if _, err := GoOutput(dir, withModfile([]string{"mod", "download"}, modfile, module)...); err != nil {
		return "", "", err
	}
	if moduleDir, version, err = list(dir, modfile, module); err == nil && moduleDir == "" {
		err = fmt.Errorf("%s %s is not in the module cache after go mod download", module, version)
	}
	return moduleDir, version, err
}

// list is module's directory in the module cache, empty when it is not
// there, and its version.
func list(dir, modfile, module string) (moduleDir, version string, err error) {
	out, err := GoOutput(dir, withModfile([]string{"list", "-m", "-f", "{{.Dir}}|{{.Version}}"}, modfile, module)...)
	moduleDir, version, _ = strings.Cut(out, "|")
	return moduleDir, version, err
}

// withModfile is args, then -modfile modfile unless empty, then module.
func withModfile(args []string, modfile, module string) []string {
	if modfile != "" {
		args = append(args, "-modfile", modfile)
	}
	return append(args, module)
}

// GoOutput is the go command's trimmed standard output for args, run in
// dir; an error carries its standard error.
func GoOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}
