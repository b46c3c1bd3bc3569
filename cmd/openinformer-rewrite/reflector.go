package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
)

const clientGoCache = "k8s.io/client-go/tools/cache"

// watchErrorHandlers keeps watch error handlers compiling after the swap.
// A handler's signature names client-go's *cache.Reflector (the handler
// types are client-go's aliases); after the swap that name is
// openinformer's Reflector. In every function signature whose parameters
// are a *cache.Reflector and, last, an error, the parameter becomes
// client-go's Reflector again, imported as clientcache beside the swapped
// import. src is a file whose tools/cache import the swap has just
// changed to ours, imported as cacheName.
func watchErrorHandlers(filename string, src []byte, cacheName string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var edits []edit
	ast.Inspect(f, func(n ast.Node) bool {
		if ft, ok := n.(*ast.FuncType); ok {
			edits = append(edits, handlerEdits(ft, cacheName)...)
		}
		return true
	})
	if len(edits) == 0 {
		return src, nil
	}
	client := importName(f, func(p string) bool { return p == clientGoCache })
	if client == "" {
		client = "clientcache"
		edits = append(edits, importEdit(f, client, clientGoCache))
	}
	for i := range edits {
		if edits[i].text == "" {
			edits[i].text = client + ".Reflector"
		}
	}
	return splice(fset, src, edits), nil
}

// importEdit adds the import of path as name to f, which imports others.
func importEdit(f *ast.File, name, path string) edit {
	last := f.Imports[len(f.Imports)-1]
	text := "\n\t" + name + " \"" + path + "\""
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT && g.Pos() <= last.Pos() && last.End() <= g.End() && !g.Lparen.IsValid() {
			text = "\nimport " + name + " \"" + path + "\""
		}
	}
	return edit{off: last.End(), end: last.End(), text: text}
}

// handlerEdits returns the edits (text left empty, to be the client-go
// name) of ft's *cacheName.Reflector parameters, when ft is a watch error
// handler's signature.
func handlerEdits(ft *ast.FuncType, cacheName string) []edit {
	params := ft.Params.List
	if len(params) < 2 || !isIdent(params[len(params)-1].Type, "error") {
		return nil
	}
	var edits []edit
	for _, p := range params {
		if star, ok := p.Type.(*ast.StarExpr); ok && isSelector(star.X, cacheName, "Reflector") {
			edits = append(edits, edit{off: star.X.Pos(), end: star.X.End()})
		}
	}
	return edits
}

// splice applies edits, which do not overlap, to src.
func splice(fset *token.FileSet, src []byte, edits []edit) []byte {
	out := slices.Clone(src)
	slices.SortFunc(edits, func(a, b edit) int { return int(b.off - a.off) })
	for _, e := range edits {
		off, end := fset.Position(e.off).Offset, fset.Position(e.end).Offset
		out = slices.Concat(out[:off], []byte(e.text), out[end:])
	}
	return out
}
