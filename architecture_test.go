package cache

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/ARCHITECTURE.md's package map names every package of this module
// (examples aside, under one line), and only those.
func TestArchitectureDocListsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]] = true
	}
	have := map[string]bool{"examples/...": true}
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || isNestedModule(path)) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") && !strings.HasPrefix(path, "examples/") {
			have[filepath.ToSlash(filepath.Dir(path))] = true
		}
		return nil
	}))
	assert.Equal(t, sortedKeys(have), sortedKeys(listed), "docs/ARCHITECTURE.md's package map")
}

// isNestedModule reports whether dir holds a module of its own.
func isNestedModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
