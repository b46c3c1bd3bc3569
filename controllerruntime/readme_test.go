package crcache

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

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
