package crcache

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeSources are the compiled files this module's README takes its Go
// snippets from.
var readmeSources = []string{"readme_example_test.go", "examples/podcounter/cmd/main.go", "examples/shardedpods/main.go"}

// Every Go snippet of this module's README compiles: it is a run of whole
// lines of a file go test or go vet builds, indentation aside (a snippet
// starts at the left margin, its source inside a function).
func TestReadmeGoSnippetsAreCompiledCode(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, name := range readmeSources {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, "\n"+unindent(string(src)))
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go snippets; the pattern or the README changed")
	}
	for _, b := range blocks {
		snippet := "\n" + unindent(b[1])
		found := false
		for _, src := range sources {
			found = found || strings.Contains(src, snippet)
		}
		if !found {
			t.Errorf("README snippet is not a run of whole lines of %v:\n%s", readmeSources, b[1])
		}
	}
}

// unindent drops every line's leading tabs.
func unindent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "\t")
	}
	return strings.Join(lines, "\n")
}

// The root README's controller-runtime diff is the example operator's
// change, line for line: every added or context line is in its main.go,
// and every line main.go marks "openinformer" is in the diff.
func TestReadmeDiffIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile("examples/podcounter/cmd/main.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)### controller-runtime\n.*?```diff\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no controller-runtime diff")
	}
	src := string(main)
	added := 0
	for _, line := range strings.Split(strings.TrimSuffix(string(m[1]), "\n"), "\n") {
		if strings.HasPrefix(line, "+") {
			added++
		}
		if !strings.Contains(src, "\n"+line[1:]+"\n") {
			t.Errorf("README diff line not in the example's main.go: %q", line)
		}
	}
	if marked := strings.Count(src, "// openinformer\n"); marked != added {
		t.Errorf("main.go marks %d lines, the README diff adds %d", marked, added)
	}
	if added > 5 {
		t.Errorf("adopting crcache takes %d lines, want at most 5", added)
	}
}
