package main

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"regexp"
	"slices"
	"testing"
)

// typeCheck builds a package from source, resolving imports of the other
// packages built here before the standard library.
func typeCheck(t *testing.T, path, src string, deps ...*types.Package) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path+".go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importerFunc(func(p string) (*types.Package, error) {
		for _, d := range deps {
			if d.Path() == p {
				return d, nil
			}
		}
		return importer.Default().Import(p)
	})}
	pkg, err := conf.Check(path, fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

type importerFunc func(string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

const refSrc = `package cache
import "time"
const Version = "v1"
var ErrClosed error
type Store interface{ Get(key string) (any, bool) }
type Delta struct { Type string; Object any; hidden }
type hidden struct{ Promoted int }
type Queue struct{}
func (Queue) Len() int { return 0 }
func (*Queue) Pop(timeout time.Duration) (any, error) { return nil, nil }
type Index[T any] func(T) ([]string, error)
type Keys = []string
func NewStore(keys Keys, s Store) *Queue { return nil }
`

// A mirror that declares its vocabulary as aliases of the reference's is
// fully compatible: aliases count as the types they name.
func TestAMirrorOfAliasesIsFullyCompatible(t *testing.T) {
	ref := typeCheck(t, "example.com/ref", refSrc)
	tgt := typeCheck(t, "example.com/ours", `package ours
import ("time"; ref "example.com/ref")
const Version = "v1"
var ErrClosed = ref.ErrClosed
type Store = ref.Store
type Delta = ref.Delta
type Queue struct{ Promoted int }
func (Queue) Len() int { return 0 }
func (*Queue) Pop(timeout time.Duration) (any, error) { return nil, nil }
type Index[T any] = ref.Index[T]
type Keys = []string
func NewStore(keys []string, s Store) *Queue { return nil }
`, ref)
	for _, f := range compareAPI(ref, tgt, nil) {
		if !f.ok() {
			t.Errorf("unexpected %s", f)
		}
	}
}

// Every kind of break is reported against the identifier it breaks, and
// -skip leaves identifiers out of the count.
func TestEveryKindOfBreakIsReported(t *testing.T) {
	ref := typeCheck(t, "example.com/ref", refSrc)
	tgt := typeCheck(t, "example.com/ours", `package ours
import "time"
const Version = "v2"
func ErrClosed() error { return nil }
type Store interface{ Get(key string) (any, error) }
type Delta struct { Type int; Object any }
type Queue struct{}
func (*Queue) Len() int { return 0 }
func (*Queue) Pop(timeout time.Duration) (any, error) { return nil, nil }
type Index[T comparable] func(T) ([]string, error)
func NewStore(keys []string, s Store) Queue { return Queue{} }
`)
	var got []string
	for _, f := range compareAPI(ref, tgt, regexp.MustCompile(`^Keys$`)) {
		if !f.ok() {
			got = append(got, f.String())
		}
	}
	want := []string{
		"MISMATCH field Delta.Type: want string, have int",
		"MISSING field Delta.Promoted",
		"MISMATCH var ErrClosed: want var error, have func() (error)",
		"MISMATCH type Index: want type [interface{}]func($0) ([]string, error), have type [comparable]func($0) ([]string, error)",
		"MISMATCH func NewStore: want func([]string, cache.Store) (*cache.Queue), have func([]string, cache.Store) (cache.Queue)",
		"MISMATCH method Queue.Len: want func() (int), have pointer receiver func() (int)",
		"MISMATCH method Store.Get: want func(string) (interface{}, bool), have func(string) (interface{}, error)",
		"MISMATCH const Version: want const untyped string = \"v1\", have const untyped string = \"v2\"",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%q\nwant:\n%q", got, want)
	}
}
