package main

import (
	"slices"
	"testing"
)

func TestParseModulesSkipsTheMainModuleAndReplacements(t *testing.T) {
	got := parseModules([]byte("example.com/user\nk8s.io/utils v1.0.0\ngithub.com/openinformer/cache v0.0.0 => /src\n"))
	want := map[string]string{"k8s.io/utils": "v1.0.0", "github.com/openinformer/cache": "v0.0.0"}
	if len(got) != len(want) || got["k8s.io/utils"] != "v1.0.0" || got["github.com/openinformer/cache"] != "v0.0.0" {
		t.Fatalf("parseModules = %v, want %v", got, want)
	}
}

func TestCompareReportsOnlyModulesInBothGraphsThatMoved(t *testing.T) {
	theirs := map[string]string{"a": "v1", "b": "v1", "only-theirs": "v1"}
	ours := map[string]string{"a": "v1", "b": "v2", "only-ours": "v9"}
	got := compare(theirs, ours)
	want := []string{"b: v1 with client-go, v2 with openinformer"}
	if !slices.Equal(got, want) {
		t.Fatalf("compare = %q, want %q", got, want)
	}
}
