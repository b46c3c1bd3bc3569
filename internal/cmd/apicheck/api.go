package main

import (
	"fmt"
	"go/types"
	"regexp"
	"strings"
)

// finding is one identifier of the reference API; want and have are its
// canonical descriptions, have is "" when the target lacks it.
type finding struct {
	kind, name, want, have string
}

func (f finding) ok() bool { return f.have != "" && f.want == f.have }

func (f finding) String() string {
	if f.have == "" {
		return fmt.Sprintf("MISSING %s %s", f.kind, f.name)
	}
	return fmt.Sprintf("MISMATCH %s %s: want %s, have %s", f.kind, f.name, f.want, f.have)
}

// comparison walks the reference package's exported API and describes each
// identifier in both packages with one canonical writer, so that a type of
// either package and an alias of it read the same.
type comparison struct {
	ref, tgt *types.Package
	skip     *regexp.Regexp
	w        writer
	found    []finding
}

func compareAPI(ref, tgt *types.Package, skip *regexp.Regexp) []finding {
	c := &comparison{ref: ref, tgt: tgt, skip: skip}
	c.w = writer{self: map[string]bool{ref.Path(): true, tgt.Path(): true}, name: ref.Name()}
	for _, name := range ref.Scope().Names() {
		if obj := ref.Scope().Lookup(name); obj.Exported() && !c.skipped(name) {
			c.object(obj, tgt.Scope().Lookup(name))
		}
	}
	return c.found
}

func (c *comparison) skipped(name string) bool {
	return c.skip != nil && c.skip.String() != "" && c.skip.MatchString(name)
}

func (c *comparison) add(kind, name, want, have string) {
	c.found = append(c.found, finding{kind, name, want, have})
}

// object compares one package-level identifier and, for a defined type,
// its methods and fields. An alias in the reference names a type declared
// elsewhere, whose members are counted there.
func (c *comparison) object(want, have types.Object) {
	kind := kindOf(want)
	tn, isType := want.(*types.TypeName)
	alias := isType && tn.IsAlias()
	c.add(kind, want.Name(), c.describe(want, alias), c.describe(have, alias))
	if !isType || alias {
		return
	}
	var haveType types.Type
	if h, ok := have.(*types.TypeName); ok {
		haveType = types.Unalias(h.Type())
	}
	c.methods(want.Name(), want.Type(), haveType)
	if st, ok := want.Type().Underlying().(*types.Struct); ok {
		c.fields(want.Name(), st, haveType, map[*types.Struct]bool{})
	}
}

func kindOf(obj types.Object) string {
	switch obj.(type) {
	case *types.Const:
		return "const"
	case *types.Var:
		return "var"
	case *types.Func:
		return "func"
	case *types.TypeName:
		return "type"
	}
	return fmt.Sprintf("%T", obj)
}

// describe is what must match for obj: its kind and type, a constant's
// value, and for a defined type only its shape (members are compared one
// by one). full describes a type by its whole type instead.
func (c *comparison) describe(obj types.Object, full bool) string {
	if obj == nil {
		return ""
	}
	d := kindOf(obj) + " "
	switch o := obj.(type) {
	case *types.Const:
		return d + c.w.str(o.Type()) + " = " + o.Val().ExactString()
	case *types.TypeName:
		if full {
			return d + c.w.str(o.Type())
		}
		return d + c.w.shape(o.Type())
	case *types.Func:
		return c.w.str(o.Type())
	}
	return d + c.w.str(obj.Type())
}

// methodSets returns the methods callable on a T value and on a *T (the
// same set for an interface); both are empty for a nil T.
func methodSets(T types.Type) (byValue, all *types.MethodSet) {
	if T == nil {
		return new(types.MethodSet), new(types.MethodSet)
	}
	byValue = types.NewMethodSet(T)
	if types.IsInterface(T) {
		return byValue, byValue
	}
	return byValue, types.NewMethodSet(types.NewPointer(T))
}

// methods compares every exported method of T and *T, promoted ones
// included. A method the reference declares on the value receiver must
// stay there, or values of the type stop satisfying interfaces.
func (c *comparison) methods(typeName string, T, have types.Type) {
	wantValue, wantAll := methodSets(T)
	haveValue, haveAll := methodSets(have)
	for sel := range wantAll.Methods() {
		m := sel.Obj()
		if !m.Exported() || c.skipped(typeName+"."+m.Name()) {
			continue
		}
		label, needValue := "(*"+typeName+")."+m.Name(), wantValue.Lookup(m.Pkg(), m.Name()) != nil
		if needValue {
			label = typeName + "." + m.Name()
		}
		have := ""
		if h := haveAll.Lookup(m.Pkg(), m.Name()); h != nil {
			have = c.w.str(h.Obj().Type())
			if needValue && haveValue.Lookup(m.Pkg(), m.Name()) == nil {
				have = "pointer receiver " + have
			}
		}
		c.add("method", label, c.w.str(m.Type()), have)
	}
}

// fields compares the exported fields of st, including those promoted
// through an unexported embedded struct, by looking each up in have.
func (c *comparison) fields(typeName string, st *types.Struct, have types.Type, seen map[*types.Struct]bool) {
	if seen[st] {
		return
	}
	seen[st] = true
	for f := range st.Fields() {
		if !f.Exported() {
			if inner, ok := embeddedStruct(f); ok {
				c.fields(typeName, inner, have, seen)
			}
			continue
		}
		if name := typeName + "." + f.Name(); !c.skipped(name) {
			c.add("field", name, c.w.str(f.Type()), c.fieldType(have, f.Name()))
		}
	}
}

func embeddedStruct(f *types.Var) (*types.Struct, bool) {
	if !f.Embedded() {
		return nil, false
	}
	t := f.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	return st, ok
}

func (c *comparison) fieldType(have types.Type, name string) string {
	if have == nil {
		return ""
	}
	if v, ok := fieldObj(have, c.tgt, name); ok {
		return c.w.str(v.Type())
	}
	return ""
}

func fieldObj(T types.Type, pkg *types.Package, name string) (*types.Var, bool) {
	obj, _, _ := types.LookupFieldOrMethod(T, true, pkg, name)
	v, ok := obj.(*types.Var)
	return v, ok && v.IsField()
}

// writer prints types canonically: aliases resolved, the compared packages
// under one name, other packages by import path, type parameters by
// position and byte and rune as uint8 and int32.
type writer struct {
	self map[string]bool
	name string
}

func (w writer) str(t types.Type) string {
	var b strings.Builder
	w.write(&b, t)
	return b.String()
}

// shape is what a defined type's declaration fixes besides its members:
// type parameters, and the underlying type unless that is a struct or a
// plain interface (whose fields and methods are compared one by one).
func (w writer) shape(t types.Type) string {
	var b strings.Builder
	switch n := t.(type) {
	case *types.Alias: // a generic alias declares type parameters of its own
		w.typeParams(&b, n.TypeParams())
	case *types.Named: // an instance has none left to declare
		if n.TypeArgs().Len() == 0 {
			w.typeParams(&b, n.TypeParams())
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Struct:
		b.WriteString("struct")
	case *types.Interface:
		if u.IsMethodSet() {
			b.WriteString("interface")
			break
		}
		w.write(&b, u)
	default:
		w.write(&b, u)
	}
	return b.String()
}

func (w writer) write(b *strings.Builder, t types.Type) {
	switch t := types.Unalias(t).(type) {
	case *types.Basic:
		b.WriteString(types.Typ[t.Kind()].Name())
	case *types.Pointer:
		b.WriteString("*")
		w.write(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		w.write(b, t.Elem())
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		w.write(b, t.Elem())
	case *types.Map:
		b.WriteString("map[")
		w.write(b, t.Key())
		b.WriteString("]")
		w.write(b, t.Elem())
	case *types.Chan:
		b.WriteString(map[types.ChanDir]string{types.SendRecv: "chan ", types.SendOnly: "chan<- ", types.RecvOnly: "<-chan "}[t.Dir()])
		w.write(b, t.Elem())
	case *types.Signature:
		w.signature(b, t)
	case *types.Struct:
		w.structType(b, t)
	case *types.Interface:
		w.interfaceType(b, t)
	case *types.Union:
		for i := range t.Len() {
			if i > 0 {
				b.WriteString(" | ")
			}
			if t.Term(i).Tilde() {
				b.WriteString("~")
			}
			w.write(b, t.Term(i).Type())
		}
	case *types.TypeParam:
		fmt.Fprintf(b, "$%d", t.Index())
	case *types.Named:
		w.named(b, t)
	default:
		b.WriteString(types.TypeString(t, nil))
	}
}

func (w writer) named(b *strings.Builder, t *types.Named) {
	if p := t.Obj().Pkg(); p != nil && w.self[p.Path()] {
		b.WriteString(w.name + ".")
	} else if p != nil {
		b.WriteString(p.Path() + ".")
	}
	b.WriteString(t.Obj().Name())
	if args := t.TypeArgs(); args.Len() > 0 {
		b.WriteString("[")
		for i := range args.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			w.write(b, args.At(i))
		}
		b.WriteString("]")
	}
}

func (w writer) signature(b *strings.Builder, s *types.Signature) {
	b.WriteString("func")
	w.typeParams(b, s.TypeParams())
	w.tuple(b, s.Params(), s.Variadic())
	if s.Results().Len() > 0 {
		b.WriteString(" ")
		w.tuple(b, s.Results(), false)
	}
}

func (w writer) tuple(b *strings.Builder, t *types.Tuple, variadic bool) {
	b.WriteString("(")
	for i := range t.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		typ := t.At(i).Type()
		if s, ok := typ.(*types.Slice); ok && variadic && i == t.Len()-1 {
			b.WriteString("...")
			typ = s.Elem()
		}
		w.write(b, typ)
	}
	b.WriteString(")")
}

// typeParams writes constraints only: renaming a type parameter is not an
// API change.
func (w writer) typeParams(b *strings.Builder, tps *types.TypeParamList) {
	if tps.Len() == 0 {
		return
	}
	b.WriteString("[")
	for i := range tps.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		w.write(b, tps.At(i).Constraint())
	}
	b.WriteString("]")
}

func (w writer) structType(b *strings.Builder, st *types.Struct) {
	b.WriteString("struct{")
	for i := range st.NumFields() {
		if i > 0 {
			b.WriteString("; ")
		}
		if f := st.Field(i); !f.Embedded() {
			b.WriteString(f.Name() + " ")
		}
		w.write(b, st.Field(i).Type())
	}
	b.WriteString("}")
}

// interfaceType lists every method, embedded ones included, then the type
// terms and comparable that make an interface a constraint.
func (w writer) interfaceType(b *strings.Builder, it *types.Interface) {
	var parts []string
	for m := range it.Methods() {
		parts = append(parts, m.Name()+strings.TrimPrefix(w.str(m.Type()), "func"))
	}
	for e := range it.EmbeddedTypes() {
		if e = types.Unalias(e); !types.IsInterface(e) || e == types.Universe.Lookup("comparable").Type() {
			parts = append(parts, w.str(e))
		}
	}
	b.WriteString("interface{" + strings.Join(parts, "; ") + "}")
}
