package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestRequirementsReadsBlocksAndSingleLines(t *testing.T) {
	gomod := filepath.Join(t.TempDir(), "go.mod")
	src := "module m\n\ngo 1.26\n\nrequire a.example/x v1.0.0\n\nrequire (\n\tb.example/y v0.2.0\n\tc.example/z v0.3.0 // indirect\n)\n"
	if err := os.WriteFile(gomod, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := requirements(gomod)
	want := []string{"a.example/x@v1.0.0", "b.example/y@v0.2.0", "c.example/z@v0.3.0"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("requirements = %v, %v; want %v", got, err, want)
	}
}

func TestCompileErrorsNameTheTestFile(t *testing.T) {
	for line, want := range map[string]string{
		"_upstreamtests1/tools_cache/fifo_test.go:12:3: f.lock undefined": "fifo_test.go",
		"./x/heap_test.go:1:2: undefined: closedMsg":                      "heap_test.go",
		"shared_informer.go:100:9: cannot use":                            "",
	} {
		got := ""
		if m := compileError.FindStringSubmatch(line); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%q: file %q, want %q", line, got, want)
		}
	}
}

func TestExternalTestIsTheXTestPackage(t *testing.T) {
	if !externalTest([]byte("// c\npackage dynamicinformer_test\n")) || externalTest([]byte("package metadatainformer\n")) {
		t.Error("externalTest misreads the package clause")
	}
}
