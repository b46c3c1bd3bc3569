package cache_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	cache "github.com/openinformer/cache"
)

// readmeSources are the compiled files README.md's Go snippets are copied
// from: a snippet is either a whole file or a run of whole lines of one.
var readmeSources = []string{"examples/quickstart/main.go", "example_readme_test.go", "cmd/openinformer-rewrite/samplecontroller_test.go"}

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// Every Go snippet in the README compiles as shown: it is copied verbatim
// from a file that go test builds.
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
		sources = append(sources, "\n"+string(src))
	}
	blocks := goBlock.FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go snippets; the pattern or the README changed")
	}
	for _, b := range blocks {
		snippet := "\n" + b[1]
		found := false
		for _, src := range sources {
			found = found || strings.Contains(src, snippet)
		}
		if !found {
			t.Errorf("README snippet is not a run of whole lines of %v:\n%s", readmeSources, b[1])
		}
	}
}

// go doc shows the package comments of all files, by file name, so a second
// one (above another file's package clause) would come before doc.go's.
func TestOnlyDocGoHasAPackageComment(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if name == "doc.go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			t.Errorf("%s has a package comment; the package's documentation lives in doc.go", name)
		}
	}
}

// The README's "Options at a glance" shows SharedIndexInformerOptions whole:
// a field added to the struct must be added there, with its zero value's
// meaning.
func TestReadmeOptionsAtAGlanceNameEveryField(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "### Options at a glance\n")
	if !ok {
		t.Fatal(`README.md has no "### Options at a glance" section`)
	}
	block := goBlock.FindString(section)
	typ := reflect.TypeFor[cache.SharedIndexInformerOptions]()
	for i := range typ.NumField() {
		if name := typ.Field(i).Name; !regexp.MustCompile(`\n\t\t` + name + `: +[^\n]+ // `).MatchString(block) {
			t.Errorf("README's options at a glance lack %s with a comment on its zero value", name)
		}
	}
}

// The file map (docs/INTERNALS.md) names every file of the package and
// every internal package, so that a reader looking for a concern finds its
// file.
func TestFileMapNamesEveryFile(t *testing.T) {
	doc, err := os.ReadFile("docs/INTERNALS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, fileMap, ok := strings.Cut(string(doc), "| Stage | Files |\n")
	if !ok {
		t.Fatal(`docs/INTERNALS.md has no file map ("| Stage | Files |")`)
	}
	fileMap, _, _ = strings.Cut(fileMap, "\n\n")
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	internals, err := filepath.Glob("internal/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range append(sources, internals...) {
		if !strings.HasSuffix(name, "_test.go") && !strings.Contains(fileMap, "`"+name) {
			t.Errorf("docs/INTERNALS.md's file map does not name %s", name)
		}
	}
}
