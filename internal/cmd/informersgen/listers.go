package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// wrapped is one resource reached through a group accessor: the group
// and version accessors' names, the informer and lister types client-go
// returns for it, and the object type and resource its lister names.
type wrapped struct {
	groupDir, versionMethod, versionDir string
	resMethod, informerType             string
	listerType, nsMethod, nsListerType  string
	objAlias, objName, resourceLit      string
}

// prefix names the generated types of w's version: coreV1, appsV1beta1.
func (w wrapped) prefix() string {
	return w.groupDir + strings.ToUpper(w.versionDir[:1]) + w.versionDir[1:]
}

func (w wrapped) informersAlias() string { return w.groupDir + w.versionDir + "informers" }
func (w wrapped) listersAlias() string   { return w.groupDir + w.versionDir + "listers" }

// wrappedResources reads, for every group directory, the group's
// Interface (its versions), each version's Interface (its resources), each
// resource's informer interface (its Lister's type) and, in
// client-go's listers, that lister interface (its namespace accessor) and
// the resource its lister reports NotFound errors under.
func wrappedResources(fset *token.FileSet, clientGoDir string, groupDirs []string, types []resourceType) ([]wrapped, error) {
	byFile := map[string]resourceType{}
	for _, t := range types {
		byFile[t.file] = t
	}
	var out []wrapped
	for _, dir := range groupDirs {
		versions, err := interfaceMethods(fset, filepath.Join(clientGoDir, "informers", dir, "interface.go"))
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			ws, err := versionResources(fset, clientGoDir, dir, v, byFile)
			if err != nil {
				return nil, err
			}
			out = append(out, ws...)
		}
	}
	return out, nil
}

// method is an interface method without parameters and its one result
// type: V1() v1.Interface, Pods() TypedPodInformer.
type method struct{ name, pkg, typ string }

// interfaceMethods reads the methods of the Interface type in file.
func interfaceMethods(fset *token.FileSet, file string) ([]method, error) {
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		return nil, err
	}
	iface := findInterface(f, "Interface")
	if iface == nil {
		return nil, fmt.Errorf("%s: no Interface", file)
	}
	var out []method
	for _, m := range iface.Methods.List {
		ft, ok := m.Type.(*ast.FuncType)
		if !ok || len(m.Names) != 1 || ft.Results.NumFields() != 1 {
			continue
		}
		pkg, typ := typeName(ft.Results.List[0].Type)
		if pkg != "" {
			pkg = importsByName(f)[pkg]
		}
		out = append(out, method{name: m.Names[0].Name, pkg: pkg, typ: typ})
	}
	return out, nil
}

// typeName splits pkg.Type or Type.
func typeName(e ast.Expr) (pkg, typ string) {
	switch t := e.(type) {
	case *ast.SelectorExpr:
		return t.X.(*ast.Ident).Name, t.Sel.Name
	case *ast.Ident:
		return "", t.Name
	}
	return "", ""
}

func findInterface(f *ast.File, name string) *ast.InterfaceType {
	var found *ast.InterfaceType
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == name {
			found, _ = ts.Type.(*ast.InterfaceType)
			return false
		}
		return found == nil
	})
	return found
}

// versionResources reads one version's resources.
func versionResources(fset *token.FileSet, clientGoDir, groupDir string, v method, byFile map[string]resourceType) ([]wrapped, error) {
	versionDir := filepath.Base(v.pkg)
	dir := filepath.Join(clientGoDir, "informers", groupDir, versionDir)
	resources, err := interfaceMethods(fset, filepath.Join(dir, "interface.go"))
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []wrapped
	for _, r := range resources {
		w := wrapped{groupDir: groupDir, versionMethod: v.name, versionDir: versionDir, resMethod: r.name, informerType: r.typ}
		file, listerPkg, err := informerLister(fset, files, r.typ, &w)
		if err != nil {
			return nil, err
		}
		t, ok := byFile[file]
		if !ok {
			return nil, fmt.Errorf("%s: no resource read from it", file)
		}
		w.objAlias, w.objName = t.alias, t.name
		if err := readLister(fset, filepath.Join(clientGoDir, strings.TrimPrefix(listerPkg, "k8s.io/client-go/")), &w); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// informerLister finds the file defining the informer interface typ and
// sets w's lister type; it returns the file and the lister's package.
func informerLister(fset *token.FileSet, files []string, typ string, w *wrapped) (string, string, error) {
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			return "", "", err
		}
		iface := findInterface(f, typ)
		if iface == nil {
			continue
		}
		for _, m := range iface.Methods.List {
			if len(m.Names) == 1 && m.Names[0].Name == "Lister" {
				pkg, name := typeName(m.Type.(*ast.FuncType).Results.List[0].Type)
				w.listerType = name
				return file, importsByName(f)[pkg], nil
			}
		}
		return "", "", fmt.Errorf("%s: %s has no Lister method", file, typ)
	}
	return "", "", fmt.Errorf("no file defines %s", typ)
}

// readLister reads, in the listers package dir, w's lister interface (its
// namespace accessor, if any) and the resource its constructor passes.
func readLister(fset *token.FileSet, dir string, w *wrapped) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			return err
		}
		iface := findInterface(f, w.listerType)
		if iface == nil {
			continue
		}
		for _, m := range iface.Methods.List {
			ft, ok := m.Type.(*ast.FuncType)
			if !ok || len(m.Names) != 1 || ft.Params.NumFields() != 1 || ft.Results.NumFields() != 1 {
				continue
			}
			if _, typ := typeName(ft.Results.List[0].Type); strings.HasSuffix(typ, "NamespaceLister") {
				w.nsMethod, w.nsListerType = m.Names[0].Name, typ
			}
		}
		w.resourceLit = resourceLiteral(f)
		if w.resourceLit == "" {
			return fmt.Errorf("%s: no Resource(...) literal", file)
		}
		return nil
	}
	return fmt.Errorf("%s: no %s", dir, w.listerType)
}

// resourceLiteral is the string passed to the API package's Resource in
// the lister's constructor: listers.New[...](indexer, v1.Resource("pod")).
func resourceLiteral(f *ast.File) string {
	lit := ""
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || lit != "" {
			return lit == ""
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Resource" && len(call.Args) == 1 {
			if b, ok := call.Args[0].(*ast.BasicLit); ok {
				lit = b.Value
			}
		}
		return true
	})
	return lit
}

// writeWrappers writes the group, version, informer and lister wrappers,
// per group, in accessor order.
func writeWrappers(b *bytes.Buffer, groupPkgs map[string]string, ws []wrapped) {
	byGroup := map[string][]wrapped{}
	var order []string
	for _, w := range ws {
		if _, ok := byGroup[w.groupDir]; !ok {
			order = append(order, w.groupDir)
		}
		byGroup[w.groupDir] = append(byGroup[w.groupDir], w)
	}
	sort.Strings(order)
	for _, g := range order {
		pkg := groupPkgs[g]
		fmt.Fprintf(b, "\n// %sGroup is client-go's %s group whose listers are ours.\ntype %sGroup struct{ %s.Interface }\n", g, pkg, g, pkg)
		seen := map[string]bool{}
		for _, w := range byGroup[g] {
			if !seen[w.versionMethod] {
				seen[w.versionMethod] = true
				writeVersion(b, w)
			}
			writeResource(b, w)
		}
	}
}

func writeVersion(b *bytes.Buffer, w wrapped) {
	p, inf := w.prefix(), w.informersAlias()
	fmt.Fprintf(b, "\n// %s returns the version's informers, their listers ours.\nfunc (g %sGroup) %s() %s.Interface { return %s{g.Interface.%s()} }\n", w.versionMethod, w.groupDir, w.versionMethod, inf, p, w.versionMethod)
	fmt.Fprintf(b, "\n// %s is client-go's %s/%s informers whose listers are ours.\ntype %s struct{ %s.Interface }\n", p, w.groupDir, w.versionDir, p, inf)
}

func writeResource(b *bytes.Buffer, w wrapped) {
	p, inf, lst := w.prefix(), w.informersAlias(), w.listersAlias()
	kind := strings.TrimSuffix(w.listerType, "Lister")
	obj := "*" + w.objAlias + "." + w.objName
	informer, lister := p+kind+"Informer", p+kind+"Lister"
	fmt.Fprintf(b, "\n// %s returns the resource's informer, its lister ours.\nfunc (v %s) %s() %s.%s { return %s{v.Interface.%s()} }\n", w.resMethod, p, w.resMethod, inf, w.informerType, informer, w.resMethod)
	fmt.Fprintf(b, "\ntype %s struct{ %s.%s }\n", informer, inf, w.informerType)
	fmt.Fprintf(b, "\n// Lister lists through this module's ListAll and ListAllByNamespace.\nfunc (i %s) Lister() %s.%s {\n\treturn %s{%s: i.%s.Lister(), typed: newTypedLister[%s](i.Informer().GetIndexer(), %s.Resource(%s))}\n}\n",
		informer, lst, w.listerType, lister, w.listerType, w.informerType, obj, w.objAlias, w.resourceLit)
	fmt.Fprintf(b, "\ntype %s struct {\n\t%s.%s\n\ttyped typedLister[%s]\n}\n", lister, lst, w.listerType, obj)
	fmt.Fprintf(b, "\n// List lists the objects selector matches.\nfunc (l %s) List(selector labels.Selector) ([]%s, error) { return l.typed.List(selector) }\n", lister, obj)
	if w.nsMethod == "" {
		return
	}
	ns := p + kind + "NamespaceLister"
	fmt.Fprintf(b, "\n// %s lists and gets in namespace.\nfunc (l %s) %s(namespace string) %s.%s {\n\treturn %s{%s: l.%s.%s(namespace), typed: l.typed.in(namespace)}\n}\n",
		w.nsMethod, lister, w.nsMethod, lst, w.nsListerType, ns, w.nsListerType, w.listerType, w.nsMethod)
	fmt.Fprintf(b, "\ntype %s struct {\n\t%s.%s\n\ttyped typedLister[%s]\n}\n", ns, lst, w.nsListerType, obj)
	fmt.Fprintf(b, "\n// List lists the namespace's objects selector matches.\nfunc (l %s) List(selector labels.Selector) ([]%s, error) { return l.typed.List(selector) }\n", ns, obj)
}

// wrapperImports are the import lines the wrappers need.
func wrapperImports(ws []wrapped) []string {
	lines := []string{"\t\"k8s.io/apimachinery/pkg/labels\""}
	seen := map[string]bool{}
	for _, w := range ws {
		base := "k8s.io/client-go/%s/" + w.groupDir + "/" + w.versionDir
		for _, l := range []string{
			"\t" + w.informersAlias() + " " + strconv.Quote(fmt.Sprintf(base, "informers")),
			"\t" + w.listersAlias() + " " + strconv.Quote(fmt.Sprintf(base, "listers")),
		} {
			if !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
	}
	return lines
}
