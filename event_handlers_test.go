package cache

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	clientcache "k8s.io/client-go/tools/cache"
)

// handlerCallLog records handler calls as readable strings.
type handlerCallLog struct{ calls []string }

func (r *handlerCallLog) OnAdd(obj interface{}, initial bool) {
	r.calls = append(r.calls, fmt.Sprintf("add %v %v", handlerTestName(obj), initial))
}
func (r *handlerCallLog) OnUpdate(o, n interface{}) {
	r.calls = append(r.calls, fmt.Sprintf("update %v %v", handlerTestName(o), handlerTestName(n)))
}
func (r *handlerCallLog) OnDelete(obj interface{}) {
	r.calls = append(r.calls, "delete "+handlerTestName(obj))
}

func handlerTestName(obj interface{}) string {
	if t, ok := obj.(DeletedFinalStateUnknown); ok {
		return "tombstone:" + t.Key
	}
	return obj.(string)
}

func TestH1_FuncsSkipNilAndDropInitialFlag(t *testing.T) {
	var got []string
	f := ResourceEventHandlerFuncs{AddFunc: func(o interface{}) { got = append(got, "add "+o.(string)) }}
	f.OnAdd("a", true)
	f.OnUpdate("a", "b")
	f.OnDelete("a")
	assert.Equal(t, []string{"add a"}, got)

	rec := &handlerCallLog{}
	d := ResourceEventHandlerDetailedFuncs{AddFunc: rec.OnAdd, UpdateFunc: rec.OnUpdate, DeleteFunc: rec.OnDelete}
	d.OnAdd("a", true)
	d.OnAdd("b", false)
	d.OnUpdate("a", "c")
	d.OnDelete("c")
	ResourceEventHandlerDetailedFuncs{}.OnAdd("x", true)
	ResourceEventHandlerDetailedFuncs{}.OnUpdate("x", "y")
	ResourceEventHandlerDetailedFuncs{}.OnDelete("x")
	assert.Equal(t, []string{"add a true", "add b false", "update a c", "delete c"}, rec.calls)

	all := &handlerCallLog{}
	full := ResourceEventHandlerFuncs{AddFunc: func(o interface{}) { all.OnAdd(o, false) }, UpdateFunc: all.OnUpdate, DeleteFunc: all.OnDelete}
	full.OnAdd("a", true)
	full.OnUpdate("a", "b")
	full.OnDelete("b")
	assert.Equal(t, []string{"add a false", "update a b", "delete b"}, all.calls)
}

func TestH2_FilteringTranslatesMembershipChanges(t *testing.T) {
	rec := &handlerCallLog{}
	in := func(obj interface{}) bool {
		if t, ok := obj.(DeletedFinalStateUnknown); ok {
			return t.Key[0] == 'i'
		}
		return obj.(string)[0] == 'i'
	}
	f := FilteringResourceEventHandler{FilterFunc: in, Handler: rec}
	f.OnAdd("in1", true)
	f.OnAdd("out1", true)
	f.OnUpdate("in1", "in2")
	f.OnUpdate("out1", "in3")
	f.OnUpdate("in3", "out2")
	f.OnUpdate("out2", "out3")
	f.OnDelete("in4")
	f.OnDelete("out4")
	f.OnDelete(DeletedFinalStateUnknown{Key: "in5"})
	f.OnDelete(DeletedFinalStateUnknown{Key: "out5"})
	assert.Equal(t, []string{
		"add in1 true", "update in1 in2", "add in3 false", "delete in3", "delete in4", "delete tombstone:in5",
	}, rec.calls)
}

func TestH2_FilteringWithNilFieldsDoesNotPanic(t *testing.T) {
	rec := &handlerCallLog{}
	all := FilteringResourceEventHandler{Handler: rec}
	all.OnAdd("a", true)
	all.OnUpdate("a", "b")
	all.OnDelete("b")
	assert.Equal(t, []string{"add a true", "update a b", "delete b"}, rec.calls, "a nil FilterFunc lets everything through")

	none := FilteringResourceEventHandler{FilterFunc: func(interface{}) bool { return true }}
	assert.NotPanics(t, func() {
		none.OnAdd("a", true)
		none.OnUpdate("a", "b")
		none.OnDelete("b")
	}, "a nil Handler receives nothing")
}

type nameTestHandler struct{}

// selfNamed names itself.
type selfNamed struct {
	nameTestHandler
	name string
}

func (h *selfNamed) EventHandlerName() string { return h.name }

func (nameTestHandler) OnAdd(interface{}, bool)           {}
func (nameTestHandler) OnUpdate(interface{}, interface{}) {}
func (nameTestHandler) OnDelete(interface{})              {}

func TestI11_HandlerNames(t *testing.T) {
	const pkg = "github.com/openinformer/cache"
	empty := ResourceEventHandlerFuncs{}
	mixed := ResourceEventHandlerFuncs{UpdateFunc: empty.OnUpdate, DeleteFunc: func(interface{}) {}}
	for name, tc := range map[string]struct {
		h    ResourceEventHandler
		want string
	}{
		"mixture":        {mixed, pkg + ".ResourceEventHandlerFuncs.OnUpdate-fm+" + pkg + ".TestI11_HandlerNames.func1"},
		"add":            {ResourceEventHandlerFuncs{AddFunc: func(interface{}) {}}, pkg + ".TestI11_HandlerNames"},
		"all":            {ResourceEventHandlerFuncs{AddFunc: func(interface{}) {}, UpdateFunc: func(_, _ interface{}) {}, DeleteFunc: func(interface{}) {}}, pkg + ".TestI11_HandlerNames"},
		"ptrToFuncs":     {&ResourceEventHandlerFuncs{DeleteFunc: func(interface{}) {}}, pkg + ".TestI11_HandlerNames"},
		"clientgoFuncs":  {clientcache.ResourceEventHandlerFuncs{AddFunc: func(interface{}) {}}, pkg + ".TestI11_HandlerNames"},
		"noFuncs":        {ResourceEventHandlerFuncs{}, "cache.ResourceEventHandlerFuncs"},
		"nilPtrToFuncs":  {(*ResourceEventHandlerFuncs)(nil), "*cache.ResourceEventHandlerFuncs"},
		"detailed":       {ResourceEventHandlerDetailedFuncs{}, "k8s.io/client-go/tools/cache.ResourceEventHandlerDetailedFuncs"},
		"struct":         {nameTestHandler{}, pkg + ".nameTestHandler"},
		"ptrToStruct":    {&nameTestHandler{}, pkg + ".nameTestHandler"},
		"nil":            {nil, "<nil>"},
		"storedNil":      {(*nameTestHandler)(nil), "*cache.nameTestHandler"},
		"clientgoFilter": {clientcache.FilteringResourceEventHandler{}, "k8s.io/client-go/tools/cache.FilteringResourceEventHandler"},
		"selfNamed":      {&selfNamed{name: "replicaset-controller"}, "replicaset-controller"},
		"selfNamedEmpty": {&selfNamed{}, pkg + ".selfNamed"},
		"selfNamedNil":   {(*selfNamed)(nil), "*cache.selfNamed"},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, eventHandlerName(tc.h))
		})
	}
}
