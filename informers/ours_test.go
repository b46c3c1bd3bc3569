package informers

import (
	"reflect"
	"strings"
	"testing"

	cache "github.com/openinformer/cache"
	"k8s.io/client-go/kubernetes/fake"
)

const ourPkg = "github.com/openinformer/cache"

// requireOurs fails unless informer is openinformer's sharedIndexInformer,
// directly or inside client-go's typed wrapper (the one client-go layer the
// generated group packages add, which embeds the informer it is given).
func requireOurs(t *testing.T, what string, informer cache.SharedIndexInformer) {
	t.Helper()
	v := reflect.ValueOf(informer)
	if e := v.Type().Elem(); e.PkgPath() == "k8s.io/client-go/tools/cache" && strings.HasPrefix(e.Name(), "typedSharedIndexInformer[") {
		v = v.Elem().FieldByName("SharedIndexInformer").Elem()
	}
	if e := v.Type().Elem(); e.PkgPath() != ourPkg || e.Name() != "sharedIndexInformer" {
		t.Errorf("%s: informer is %s.%s, want %s.sharedIndexInformer", what, e.PkgPath(), e.Name(), ourPkg)
	}
}

func TestEveryForResourceInformerIsOurs(t *testing.T) {
	f := NewSharedInformerFactory(fake.NewClientset(), 0)
	for _, gvr := range resourceGVRs() {
		gi, err := f.ForResource(gvr)
		if err != nil {
			t.Fatalf("%v: %v", gvr, err)
		}
		requireOurs(t, gvr.String(), gi.Informer())
	}
}

// TestEveryTypedAccessorInformerIsOurs walks the factory's interface by
// reflection, group by group, version by version, resource by resource, so
// an accessor client-go adds is covered without listing it here.
func TestEveryTypedAccessorInformerIsOurs(t *testing.T) {
	f := reflect.ValueOf(NewSharedInformerFactory(fake.NewClientset(), 0))
	count := 0
	for group := range accessors(f) {
		for version := range accessors(group) {
			for res := range accessors(version) {
				name := group.Type().String() + "/" + version.Type().String() + "/" + res.Type().String()
				requireOurs(t, name+".Informer", res.MethodByName("Informer").Call(nil)[0].Interface().(cache.SharedIndexInformer))
				typed := res.MethodByName("TypedInformer")
				if !typed.IsValid() {
					t.Errorf("%s has no TypedInformer", name)
					continue
				}
				requireOurs(t, name+".TypedInformer", typed.Call(nil)[0].Interface().(cache.SharedIndexInformer))
				count++
			}
		}
	}
	if count != len(resourceGVRs()) {
		t.Errorf("walked %d typed accessors, ForResource serves %d resources", count, len(resourceGVRs()))
	}
}

// accessors yields the results of v's methods that take nothing and return
// one interface other than a SharedIndexInformer: group, version and
// resource accessors, whichever level v is.
func accessors(v reflect.Value) func(func(reflect.Value) bool) {
	return func(yield func(reflect.Value) bool) {
		for i := range v.NumMethod() {
			m := v.Method(i).Type()
			if m.NumIn() != 0 || m.NumOut() != 1 || m.Out(0).Kind() != reflect.Interface || !strings.HasPrefix(m.Out(0).PkgPath(), "k8s.io/client-go/informers/") {
				continue
			}
			if !yield(v.Method(i).Call(nil)[0].Elem()) {
				return
			}
		}
	}
}

// TestBuiltinIdentityMatchesForResource checks the identity the builtins
// table gives each type ForResource serves against the GVR client-go's
// generic.go lists for it, and that every table entry is served. The table
// holds the GVR client-go's generated informer identifies itself with,
// which in v0.37.2 is the kind plus "s" ("ingresss", "endpointss",
// "networkpolicys"); we
// keep client-go's, so metrics are labelled as client-go labels them.
func TestBuiltinIdentityMatchesForResource(t *testing.T) {
	for _, gvr := range resourceGVRs() {
		f := NewSharedInformerFactory(fake.NewClientset(), 0).(*sharedInformerFactory)
		if _, err := f.ForResource(gvr); err != nil {
			t.Fatal(err)
		}
		if len(f.informers) != 1 {
			t.Fatalf("%v: %d informers", gvr, len(f.informers))
		}
		for typ := range f.informers {
			got, ok := f.builtin(typ)
			if ok && got.gvr.GroupVersion() == gvr.GroupVersion() && got.gvr.Resource == strings.ToLower(typ.Elem().Name())+"s" {
				continue // client-go's naive plural, kept
			}
			if !ok || got.gvr != gvr {
				t.Errorf("%v: type %v resolves to %v (found %v)", gvr, typ, got.gvr, ok)
			}
		}
	}
	types := 0
	for _, group := range allBuiltins() {
		types += len(group())
	}
	if types != len(resourceGVRs()) {
		t.Errorf("%d types in the builtins tables, %d resources in ForResource", types, len(resourceGVRs()))
	}
}
