// Package script runs the data-driven test scripts of this module: the
// informer scenarios and the Reflector state machine's scripts share one
// format and one -rewrite flag.
//
// A script is a sequence of blocks. A block is a command line, a line
// "----", and the command's output, ended by a blank line (or the end of
// the file); output lines are never blank, and empty output is "----"
// directly followed by the blank line. Lines before a command that are
// blank or start with "#" are comments; they are kept by a rewrite.
package script

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewrite makes Check regenerate expectations from the actual output.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of test scripts from the actual output")

// Block is one command of a script with its expected output.
type Block struct {
	// Line is the command's line number, for messages.
	Line int
	// Cmd is the command line.
	Cmd string
	// Want is the expected output, each line ending in "\n".
	Want string
	// pre is the comment text before the command.
	pre string
}

// Parse reads the blocks of the script at path.
func Parse(t testing.TB, path string) []Block {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []Block
	var pre strings.Builder
	lines := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			pre.WriteString(line + "\n")
			continue
		}
		b := Block{Line: i + 1, Cmd: line, pre: pre.String()}
		pre.Reset()
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: command without a following ----", path, b.Line)
		}
		for i += 2; i < len(lines) && lines[i] != ""; i++ {
			b.Want += lines[i] + "\n"
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// Check compares got, the output of each block's command, with the
// expectations; with -rewrite it writes got into the script instead, if
// canRewrite (a script run several ways is rewritten from one of them).
func Check(t testing.TB, path string, blocks []Block, got []string, canRewrite bool) {
	t.Helper()
	if len(got) != len(blocks) {
		t.Fatalf("%s: %d outputs for %d commands", path, len(got), len(blocks))
	}
	if *rewrite {
		if canRewrite {
			write(t, path, blocks, got)
		}
		return
	}
	for i, b := range blocks {
		if got[i] != b.Want {
			t.Fatalf("%s:%d: %s\nwant:\n%sgot:\n%s", path, b.Line, b.Cmd, b.Want, got[i])
		}
	}
}

// Run runs every block's command through do, in order, and checks the
// outputs (see Check).
func Run(t testing.TB, path string, do func(cmd string) string) {
	t.Helper()
	blocks := Parse(t, path)
	got := make([]string, len(blocks))
	for i, b := range blocks {
		got[i] = do(b.Cmd)
	}
	Check(t, path, blocks, got, true)
}

func write(t testing.TB, path string, blocks []Block, got []string) {
	var out strings.Builder
	for i, b := range blocks {
		if i > 0 {
			out.WriteString("\n")
		}
		fmt.Fprintf(&out, "%s%s\n----\n%s", b.pre, b.Cmd, got[i])
	}
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// RunAll runs run as a subtest for every script file matching pattern
// (testdata/*.txt, say), named by its base name; no match fails t, so a
// moved testdata directory cannot pass by running nothing.
func RunAll(t *testing.T, pattern string, run func(t *testing.T, file string)) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts match %s (err %v)", pattern, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { run(t, file) })
	}
}
