// Package importmap is the one list of client-go import paths openinformer
// replaces, and the source rewrite that swaps them, shared by the
// openinformer-rewrite command and the upstream test runner.
package importmap

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"strconv"
)

// Paths maps each client-go package with an openinformer counterpart of
// the same package name to that counterpart.
var Paths = map[string]string{
	"k8s.io/client-go/tools/cache":               "github.com/openinformer/cache",
	"k8s.io/client-go/informers":                 "github.com/openinformer/cache/informers",
	"k8s.io/client-go/dynamic/dynamicinformer":   "github.com/openinformer/cache/dynamicinformer",
	"k8s.io/client-go/metadata/metadatainformer": "github.com/openinformer/cache/metadatainformer",
}

// Rewrite returns src with every import in paths replaced, and whether
// anything changed. Only import paths change; the file is printed back in
// gofmt style, as generated code already is.
func Rewrite(filename string, src []byte, paths map[string]string) ([]byte, bool, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.ParseComments)
	if err != nil {
		return nil, false, err
	}
	changed := false
	ast.Inspect(f, func(n ast.Node) bool {
		imp, ok := n.(*ast.ImportSpec)
		if !ok {
			return true
		}
		path, err := strconv.Unquote(imp.Path.Value)
		if to, ok := paths[path]; err == nil && ok {
			imp.Path.Value = strconv.Quote(to)
			changed = true
		}
		return false
	})
	if !changed {
		return src, false, nil
	}
	var b bytes.Buffer
	if err := format.Node(&b, fset, f); err != nil {
		return nil, false, err
	}
	return b.Bytes(), true, nil
}
