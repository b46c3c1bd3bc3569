package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"strings"
)

// constructorName matches client-go's generated per-resource constructors:
// NewPodInformer, NewFilteredPodInformer, NewPodInformerWithOptions and
// their Typed variants.
var constructorName = regexp.MustCompile(`^New(Typed)?(Filtered)?[A-Z]\w*Informer(WithOptions)?$`)

// clientGoInternal is the package of client-go's InformerOptions, whose
// InformerName field is client-go's *cache.InformerName.
const clientGoInternal = "k8s.io/client-go/informers/internalinterfaces"

// finding is a call of one of client-go's generated per-resource
// constructors: an informer that stays client-go's after the swap.
// conflict is set when the call passes an InformerName, whose type the
// swap changes to openinformer's, so the call would no longer compile.
type finding struct {
	pos      token.Position
	call     string
	conflict bool
}

func (f finding) String() string {
	if !f.conflict {
		return fmt.Sprintf("%s: %s builds client-go's informer, not openinformer's (client-go's generated constructor; get it from a factory, or build it with cache.NewSharedIndexInformerWithOptions)", f.pos, f.call)
	}
	return fmt.Sprintf("%s: %s is client-go's generated constructor, and its InformerOptions.InformerName is client-go's *cache.InformerName; "+
		"the tools/cache swap makes the value passed there openinformer's, so this line would not compile. "+
		"Replace the call with cache.NewSharedIndexInformerWithOptions(lw, &<Kind>{}, cache.SharedIndexInformerOptions{ResyncPeriod: ..., Indexers: ..., Identifier: informerName.WithResource(<gvr>)}), "+
		"lw being cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{ListWithContextFunc: ..., WatchFuncWithContext: ...}, client) over the same typed client calls with the tweak applied "+
		"(it compiles with either tools/cache, and the informer becomes openinformer's), then run openinformer-rewrite again", f.pos, f.call)
}

// clientGoConstructors finds the calls of client-go's generated
// per-resource constructors in f.
func clientGoConstructors(fset *token.FileSet, f *ast.File) []finding {
	pkgs := map[string]bool{}
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		if rest, ok := strings.CutPrefix(path, "k8s.io/client-go/informers/"); ok && strings.Count(rest, "/") == 1 && path != clientGoInternal {
			pkgs[importName(f, func(p string) bool { return p == path })] = true
		}
	}
	if len(pkgs) == 0 {
		return nil
	}
	internal := importName(f, func(p string) bool { return p == clientGoInternal })
	var found []finding
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !constructorName.MatchString(sel.Sel.Name) {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && pkgs[x.Name] {
			found = append(found, finding{pos: fset.Position(call.Pos()), call: x.Name + "." + sel.Sel.Name, conflict: passesInformerName(call, internal)})
		}
		return true
	})
	return found
}

// passesInformerName reports whether call passes an InformerOptions
// literal of client-go's internalinterfaces with a non-nil InformerName.
func passesInformerName(call *ast.CallExpr, internal string) bool {
	for _, arg := range call.Args {
		lit, ok := arg.(*ast.CompositeLit)
		if !ok || internal == "" || !isSelector(lit.Type, internal, "InformerOptions") {
			continue
		}
		for _, e := range lit.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "InformerName") && !isIdent(kv.Value, "nil") {
				return true
			}
		}
	}
	return false
}
