// Command informersgen writes informers/zz_generated.go from the informers
// package of the client-go this module requires: the typed factory's group
// accessors (factory.go's SharedInformerFactory interface), its ForResource
// table (generic.go's switch) and, per object type, the resource and the
// clientset call that lists and watches it (each generated resource file's
// GVR and ListFunc). A new client-go needs a rerun: `make generate`; `make
// generate-check` (CI) fails when the checked-in file is stale.
//
// Usage:
//
//	go run ./internal/cmd/informersgen [-modfile FILE] [-tags EXPR] [-o informers/zz_generated.go] [-check]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func main() {
	out := flag.String("o", "informers/zz_generated.go", "file to write")
	modfile := flag.String("modfile", "", "alternative go.mod to resolve client-go with")
	check := flag.Bool("check", false, "fail if the file differs instead of writing it")
	tags := flag.String("tags", "", "build constraint of the file (one generated file per client-go minor)")
	flag.Parse()
	if err := run(*out, *modfile, *tags, *check); err != nil {
		fmt.Fprintln(os.Stderr, "informersgen:", err)
		os.Exit(1)
	}
}

func run(out, modfile, tags string, check bool) error {
	dir, version, err := clientGoDir(modfile)
	if err != nil {
		return err
	}
	src, err := generate(filepath.Join(dir, "informers"), version, tags)
	if err != nil {
		return err
	}
	if !check {
		return os.WriteFile(out, src, 0o644)
	}
	old, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	if !bytes.Equal(old, src) {
		return fmt.Errorf("%s is stale for client-go %s: run make generate", out, version)
	}
	return nil
}

// clientGoDir is where the go command keeps the client-go the module
// requires, downloaded first if the module cache lacks it (a fresh machine
// has go.mod's client-go only once something built with it, and
// go.next.mod's never).
func clientGoDir(modfile string) (dir, version string, err error) {
	dir, version, err = listClientGo(modfile)
	if err != nil || dir != "" {
		return dir, version, err
	}
	if err := goCommand("mod", "download", modfile).Run(); err != nil {
		return "", "", fmt.Errorf("go mod download client-go: %w", err)
	}
	if dir, version, err = listClientGo(modfile); err == nil && dir == "" {
		err = fmt.Errorf("client-go %s is not in the module cache after go mod download", version)
	}
	return dir, version, err
}

// listClientGo is the module cache's directory of the client-go the module
// requires, empty when it is not there, and its version.
func listClientGo(modfile string) (dir, version string, err error) {
	b, err := goCommand("list", "-m -f {{.Dir}}|{{.Version}}", modfile).Output()
	if err != nil {
		return "", "", fmt.Errorf("go list client-go: %w", err)
	}
	dir, version, _ = strings.Cut(strings.TrimSpace(string(b)), "|")
	return dir, version, nil
}

// goCommand is `go <verb> [flags] [-modfile modfile] k8s.io/client-go`,
// flags split on spaces, its errors to ours.
func goCommand(verb, flags, modfile string) *exec.Cmd {
	args := []string{verb}
	args = append(args, strings.Fields(flags)...)
	if modfile != "" {
		args = append(args, "-modfile", modfile)
	}
	cmd := exec.Command("go", append(args, "k8s.io/client-go")...)
	cmd.Stderr = os.Stderr
	return cmd
}

// group is one accessor of client-go's SharedInformerFactory, e.g. Core()
// returning core.Interface.
type group struct{ method, pkgName string }

// resource is one ForResource case: the GVR expression as generic.go writes
// it and the accessor chain that reaches its informer.
type resource struct{ gvr, chain string }

func generate(informersDir, version, tags string) ([]byte, error) {
	fset := token.NewFileSet()
	factory, err := parser.ParseFile(fset, filepath.Join(informersDir, "factory.go"), nil, 0)
	if err != nil {
		return nil, err
	}
	generic, err := parser.ParseFile(fset, filepath.Join(informersDir, "generic.go"), nil, 0)
	if err != nil {
		return nil, err
	}
	groups, err := factoryGroups(factory)
	if err != nil {
		return nil, err
	}
	resources, err := forResourceCases(fset, generic)
	if err != nil {
		return nil, err
	}
	imports, err := usedImports(groups, resources, factory, generic)
	if err != nil {
		return nil, err
	}
	types, err := resourceFiles(fset, informersDir, importsByName(generic))
	if err != nil {
		return nil, err
	}
	for _, t := range types {
		line := fmt.Sprintf("\t%s %q", t.alias, t.path)
		if !slices.Contains(imports, line) {
			imports = append(imports, line)
		}
	}
	factoryImports := importsByName(factory)
	groupPkgs := map[string]string{}
	var groupDirs []string
	for _, g := range groups {
		dir := filepath.Base(factoryImports[g.pkgName])
		groupPkgs[dir] = g.pkgName
		groupDirs = append(groupDirs, dir)
	}
	wraps, err := wrappedResources(fset, filepath.Dir(informersDir), groupDirs, types)
	if err != nil {
		return nil, err
	}
	imports = append(imports, wrapperImports(wraps)...)
	imports = append(imports, "\t\"context\"", "\t\"reflect\"", "\t\"k8s.io/client-go/kubernetes\"",
		"\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"", "\t\"k8s.io/apimachinery/pkg/runtime\"", "\t\"k8s.io/apimachinery/pkg/watch\"")
	sort.Strings(imports)
	var b bytes.Buffer
	if tags != "" {
		fmt.Fprintf(&b, "//go:build %s\n\n", tags)
	}
	fmt.Fprintf(&b, "// Code generated by internal/cmd/informersgen from k8s.io/client-go %s informers; DO NOT EDIT.\n\n", version)
	b.WriteString("package informers\n\nimport (\n")
	for _, imp := range imports {
		b.WriteString(imp + "\n")
	}
	b.WriteString(")\n\n")
	for _, g := range groups {
		dir := filepath.Base(factoryImports[g.pkgName])
		fmt.Fprintf(&b, "// %s returns client-go's %s group informers, built on this factory, with listers of ours.\n", g.method, g.pkgName)
		fmt.Fprintf(&b, "func (f *sharedInformerFactory) %s() %s.Interface {\n\tf.use(%q, %sBuiltins)\n\treturn %sGroup{%s.New(f, f.namespace, f.tweakListOptions)}\n}\n\n", g.method, g.pkgName, g.method, dir, dir, g.pkgName)
	}
	b.WriteString("// informerForResource returns the informer ForResource serves for gvr.\n")
	b.WriteString("func (f *sharedInformerFactory) informerForResource(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, bool) {\n\tswitch gvr {\n")
	for _, r := range resources {
		fmt.Fprintf(&b, "\tcase %s:\n\t\treturn f.%s.Informer(), true\n", r.gvr, r.chain)
	}
	b.WriteString("\t}\n\treturn nil, false\n}\n\n")
	b.WriteString("// resourceGVRs lists the resources ForResource serves.\n")
	b.WriteString("func resourceGVRs() []schema.GroupVersionResource {\n\treturn []schema.GroupVersionResource{\n")
	for _, r := range resources {
		fmt.Fprintf(&b, "\t\t%s,\n", r.gvr)
	}
	b.WriteString("\t}\n}\n\n")
	b.WriteString("// allBuiltins lists every group's builtins by group accessor.\n")
	b.WriteString("func allBuiltins() map[string]func() builtinGroup {\n\treturn map[string]func() builtinGroup{\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "\t\t%q: %sBuiltins,\n", g.method, filepath.Base(factoryImports[g.pkgName]))
	}
	b.WriteString("\t}\n}\n")
	byDir := map[string][]resourceType{}
	for _, t := range types {
		byDir[t.dir] = append(byDir[t.dir], t)
	}
	for _, g := range groups {
		dir := filepath.Base(factoryImports[g.pkgName])
		fmt.Fprintf(&b, "\n// %sBuiltins is, per object type of the %s group, the resource and the\n// clientset calls that list and watch it, as client-go's generated\n// informers make them.\n", dir, g.pkgName)
		fmt.Fprintf(&b, "func %sBuiltins() builtinGroup {\n\treturn builtinGroup{\n", dir)
		for _, t := range byDir[dir] {
			fmt.Fprintf(&b, "\treflect.TypeFor[*%s.%s](): {\n\t\tgvr: %s,\n", t.alias, t.name, t.gvr)
			fmt.Fprintf(&b, "\t\tlist: func(ctx context.Context, client kubernetes.Interface, namespace string, opts metav1.ListOptions) (runtime.Object, error) {\n\t\t\treturn %s.List(ctx, opts)\n\t\t},\n", t.client)
			fmt.Fprintf(&b, "\t\twatch: func(ctx context.Context, client kubernetes.Interface, namespace string, opts metav1.ListOptions) (watch.Interface, error) {\n\t\t\treturn %s.Watch(ctx, opts)\n\t\t},\n\t},\n", t.client)
		}
		b.WriteString("\t}\n}\n")
	}
	writeWrappers(&b, groupPkgs, wraps)
	return format.Source(b.Bytes())
}

// factoryGroups reads the group accessors of the SharedInformerFactory
// interface: methods without parameters returning <pkg>.Interface.
func factoryGroups(f *ast.File) ([]group, error) {
	var groups []group
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "SharedInformerFactory" {
			return true
		}
		for _, m := range ts.Type.(*ast.InterfaceType).Methods.List {
			ft, ok := m.Type.(*ast.FuncType)
			if !ok || len(m.Names) != 1 || ft.Params.NumFields() != 0 || ft.Results.NumFields() != 1 {
				continue
			}
			sel, ok := ft.Results.List[0].Type.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Interface" {
				continue
			}
			groups = append(groups, group{method: m.Names[0].Name, pkgName: sel.X.(*ast.Ident).Name})
		}
		return false
	})
	if len(groups) == 0 {
		return nil, fmt.Errorf("factory.go: no group accessors in SharedInformerFactory")
	}
	return groups, nil
}

// forResourceCases reads generic.go's ForResource switch: each case's GVR
// expression and the f.Group().Version().Resource() chain it returns.
func forResourceCases(fset *token.FileSet, f *ast.File) ([]resource, error) {
	var out []resource
	var err error
	ast.Inspect(f, func(n ast.Node) bool {
		cc, ok := n.(*ast.CaseClause)
		if !ok || err != nil {
			return true
		}
		if len(cc.List) != 1 || len(cc.Body) != 1 {
			err = fmt.Errorf("generic.go:%d: unexpected case shape", fset.Position(cc.Pos()).Line)
			return false
		}
		chain, ok := informerChain(cc.Body[0])
		if !ok {
			err = fmt.Errorf("generic.go:%d: case does not return f.<chain>.Informer()", fset.Position(cc.Pos()).Line)
			return false
		}
		out = append(out, resource{gvr: exprString(fset, cc.List[0]), chain: exprString(fset, chain)})
		return false
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("generic.go: no ForResource cases")
	}
	return out, err
}

// informerChain finds, in `return &genericInformer{..., informer: X.Informer()}, nil`,
// the chain X without its leading "f.".
func informerChain(stmt ast.Stmt) (ast.Expr, bool) {
	ret, ok := stmt.(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 2 {
		return nil, false
	}
	u, ok := ret.Results[0].(*ast.UnaryExpr)
	if !ok {
		return nil, false
	}
	lit, ok := u.X.(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok || kv.Key.(*ast.Ident).Name != "informer" {
			continue
		}
		call, ok := kv.Value.(*ast.CallExpr)
		if !ok {
			return nil, false
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Informer" {
			return nil, false
		}
		return stripReceiver(sel.X)
	}
	return nil, false
}

// stripReceiver removes the innermost "f." from a call chain f.A().B().
func stripReceiver(e ast.Expr) (ast.Expr, bool) {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return nil, false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil, false
	}
	if id, ok := sel.X.(*ast.Ident); ok && id.Name == "f" {
		return &ast.CallExpr{Fun: sel.Sel}, true
	}
	inner, ok := stripReceiver(sel.X)
	if !ok {
		return nil, false
	}
	return &ast.CallExpr{Fun: &ast.SelectorExpr{X: inner, Sel: sel.Sel}}, true
}

func exprString(fset *token.FileSet, e ast.Expr) string {
	var b bytes.Buffer
	if err := format.Node(&b, fset, e); err != nil {
		panic(err) // an expression parsed from Go source always prints
	}
	return b.String()
}

// usedImports is the import block: the group packages under factory.go's
// names, the packages the GVR expressions name under generic.go's, and the two
// this file needs. One name for two packages is an error, not a silent mix-up.
func usedImports(groups []group, resources []resource, factory, generic *ast.File) ([]string, error) {
	byName := map[string]string{
		"schema": "k8s.io/apimachinery/pkg/runtime/schema",
		"cache":  "github.com/openinformer/cache",
	}
	use := func(f *ast.File, name string) error {
		path, ok := importsByName(f)[name]
		if !ok {
			return fmt.Errorf("no import for %s", name)
		}
		if old, ok := byName[name]; ok && old != path {
			return fmt.Errorf("import name %s means %s and %s", name, old, path)
		}
		byName[name] = path
		return nil
	}
	for _, g := range groups {
		if err := use(factory, g.pkgName); err != nil {
			return nil, err
		}
	}
	for _, r := range resources {
		name, _, _ := strings.Cut(r.gvr, ".")
		if err := use(generic, name); err != nil {
			return nil, err
		}
	}
	var lines []string
	for name, path := range byName {
		lines = append(lines, fmt.Sprintf("\t%s %q", name, path))
	}
	sort.Strings(lines)
	return lines, nil
}

// importsByName maps each import's name in f to its path.
func importsByName(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		m[name] = path
	}
	return m
}

// resourceType is one generated resource file: its object type (package
// path, the name generic.go imports it under, type name), its GVR literal
// and the clientset call its ListFunc lists with.
type resourceType struct{ dir, file, path, alias, name, gvr, client string }

// resourceFiles reads every informers/<group>/<version>/<resource>.go file,
// naming object packages as generic.go does (or by group and version when
// it does not import one).
func resourceFiles(fset *token.FileSet, informersDir string, names map[string]string) ([]resourceType, error) {
	aliases := map[string]string{}
	for name, path := range names {
		aliases[path] = name
	}
	files, err := filepath.Glob(filepath.Join(informersDir, "*", "*", "*.go"))
	if err != nil {
		return nil, err
	}
	var out []resourceType
	for _, file := range files {
		if filepath.Base(file) == "interface.go" {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			return nil, err
		}
		rt, ok := resourceFile(fset, f, importsByName(f))
		rt.dir = filepath.Base(filepath.Dir(filepath.Dir(file)))
		rt.file = file
		if !ok {
			return nil, fmt.Errorf("%s: no GVR, object type or clientset List call", file)
		}
		rt.alias = aliases[rt.path]
		if rt.alias == "" {
			rel := strings.TrimPrefix(rt.path, "k8s.io/api/")
			rt.alias = strings.NewReplacer("/", "", ".", "").Replace(rel)
			aliases[rt.path] = rt.alias
		}
		out = append(out, rt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvr < out[j].gvr })
	return out, nil
}

// resourceFile finds in one generated resource file the GVR literal
// (gvr := schema.GroupVersionResource{...}), the object type
// (InformerFor(&pkg.Kind{}, ...)) and the List call's receiver
// (client.Group().Resource(namespace)).
func resourceFile(fset *token.FileSet, f *ast.File, imports map[string]string) (resourceType, bool) {
	var rt resourceType
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if id, ok := n.Lhs[0].(*ast.Ident); ok && id.Name == "gvr" && rt.gvr == "" {
				rt.gvr = exprString(fset, n.Rhs[0])
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			switch {
			case sel.Sel.Name == "InformerFor" && len(n.Args) == 2 && rt.name == "":
				if lit, ok := n.Args[0].(*ast.UnaryExpr); ok {
					if typ, ok := lit.X.(*ast.CompositeLit).Type.(*ast.SelectorExpr); ok {
						rt.path, rt.name = imports[typ.X.(*ast.Ident).Name], typ.Sel.Name
					}
				}
			case sel.Sel.Name == "List" && rt.client == "" && rootIdent(sel.X) == "client":
				rt.client = exprString(fset, sel.X)
			}
		}
		return true
	})
	return rt, rt.gvr != "" && rt.path != "" && rt.client != ""
}

// rootIdent is the identifier a selector and call chain starts from.
func rootIdent(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.CallExpr:
			e = x.Fun
		case *ast.SelectorExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
