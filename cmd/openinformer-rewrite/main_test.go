package main

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinformer/cache/internal/importmap"
)

// TestRewrittenInformerGenOutputBuildsOurInformers takes real informer-gen
// output, client-go's generated internalinterfaces and core group, from the
// module cache, moves it to a throwaway module as a project's generated
// code would be, rewrites it with this command and runs a program that
// checks, by package path, that the informer the generated code builds on
// a factory is openinformer's all the way down (typed wrapper included),
// built with the factory's openinformer options.
// (The whole generated tree with its factory works the same way but takes
// minutes to compile.)
func TestRewrittenInformerGenOutputBuildsOurInformers(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a copy of client-go's informers")
	}
	root := goOut(t, "", "list", "-m", "-f", "{{.Dir}}")
	clientGo := goOut(t, root, "list", "-m", "-f", "{{.Dir}}", "k8s.io/client-go")
	mod := t.TempDir()
	for _, dir := range []string{"internalinterfaces", "core"} {
		copyGenerated(t, filepath.Join(clientGo, "informers", dir), filepath.Join(mod, "generated", dir))
	}
	writeModule(t, root, mod)

	t.Chdir(mod)
	var listed strings.Builder
	changed, err := run([]string{"./generated/..."}, importmap.Paths, false, &listed, io.Discard)
	if err != nil || changed == 0 {
		t.Fatalf("rewrite: %d files, %v", changed, err)
	}
	if again, err := run([]string{"./generated/..."}, importmap.Paths, true, io.Discard, io.Discard); err != nil || again != 0 {
		t.Errorf("second run would change %d files (%v), want none", again, err)
	}
	if out := goRun(t, mod); strings.TrimSpace(out) != "ours ours adjusted" {
		t.Errorf("program says %q, want the typed wrapper and the informer to be ours, built with the factory's options", out)
	}
}

// copyGenerated copies a directory of client-go's informers to dst, turning
// imports of client-go's informers into imports of the copy,
// example.com/gen/generated.
func copyGenerated(t *testing.T, src, dst string) {
	t.Helper()
	copyTree(t, src, dst, `"k8s.io/client-go/informers/`, `"example.com/gen/generated/`)
}

// copyTree copies the Go files (tests left out) under src to dst, replacing
// from with to in each.
func copyTree(t *testing.T, src, dst, from, to string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b = []byte(strings.ReplaceAll(string(b), from, to))
		rel, _ := filepath.Rel(src, path)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

const program = `package main

import (
	"fmt"
	"reflect"
	"time"

	"example.com/gen/generated/core"
	"example.com/gen/generated/internalinterfaces"
	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/informers/genfactory"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// factory is the least a generated factory does: it calls the generated
// constructor, and hands it openinformer's options as openinformer-rewrite
// has a generated factory do.
type factory struct {
	client  kubernetes.Interface
	options *genfactory.Options
}

func (f factory) OpenInformerBuilder() *genfactory.Builder {
	return f.options.Builder("", nil, nil)
}

var adjusted string

func (f factory) Start(<-chan struct{}) {}

func (f factory) InformerFor(_ runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return newFunc(f.client, time.Minute)
}

func (f factory) InformerName() *cache.InformerName { return nil }

func main() {
	var options genfactory.Options
	options.AddInformerOptions(func(obj runtime.Object, opts *cache.SharedIndexInformerOptions) {
		adjusted = fmt.Sprintf("adjusted %T", obj)
	})
	group := core.New(factory{fake.NewClientset(), &options}, "", nil)
	typed := reflect.ValueOf(group.V1().Pods().Informer())
	inner := typed.Elem().Field(0).Elem()
	if adjusted == "adjusted *v1.Pod" {
		adjusted = "adjusted"
	}
	fmt.Println(pkg(typed), pkg(inner), adjusted)
}

func pkg(v reflect.Value) string {
	if v.Type().Elem().PkgPath() == "github.com/openinformer/cache" {
		return "ours"
	}
	return v.Type().Elem().PkgPath()
}
`

// writeModule makes mod a module requiring this one (from root) with the
// same build list, and writes the checking program.
func writeModule(t *testing.T, root, mod string) {
	t.Helper()
	writeModuleProgram(t, root, mod, "example.com/gen", program)
}

// writeModuleProgram makes mod module path, requiring this one (from root)
// with the same build list, with main.go holding program.
func writeModuleProgram(t *testing.T, root, mod, path, program string) {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(gomod), "module github.com/openinformer/cache", "module "+path, 1)
	s += "\nrequire github.com/openinformer/cache v0.0.0\n\nreplace github.com/openinformer/cache => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"go.mod": []byte(s), "go.sum": sum, "main.go": []byte(program)} {
		if err := os.WriteFile(filepath.Join(mod, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goRun builds and runs the program of the throwaway module mod and
// returns what it printed. -trimpath keeps the module's directory, a fresh
// temporary one each run, out of the build cache's keys: the build cache is
// keyed by content, so a run whose rewritten sources, program and
// dependencies are unchanged reuses the packages and the executable an
// earlier run compiled and linked from exactly those sources (seconds, not
// tens of seconds), and any change to them, the rewrite's output included,
// compiles again.
func goRun(t *testing.T, mod string) string {
	t.Helper()
	return goOut(t, mod, "run", "-trimpath", ".")
}

func goOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
