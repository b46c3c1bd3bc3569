package cache

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
)

// typedTestEvent is one call a typed handler received, in a comparable form.
type typedTestEvent struct {
	kind    string
	obj     *v1.Pod
	old     *v1.Pod
	initial bool
	deleted DeletedObject[*v1.Pod]
}

// typedTestRecorder is a TypedResourceEventHandler[*v1.Pod] that records
// every call and optionally forwards it to a channel.
type typedTestRecorder struct {
	events []typedTestEvent
	ch     chan typedTestEvent
}

func (r *typedTestRecorder) record(e typedTestEvent) {
	if r.ch != nil {
		r.ch <- e
		return
	}
	r.events = append(r.events, e)
}

func (r *typedTestRecorder) OnAdd(obj *v1.Pod, isInInitialList bool) {
	r.record(typedTestEvent{kind: "add", obj: obj, initial: isInInitialList})
}

func (r *typedTestRecorder) OnUpdate(oldObj, newObj *v1.Pod) {
	r.record(typedTestEvent{kind: "update", old: oldObj, obj: newObj})
}

func (r *typedTestRecorder) OnDelete(obj DeletedObject[*v1.Pod]) {
	r.record(typedTestEvent{kind: "delete", deleted: obj})
}

// typedTestCaptureInformer is a SharedIndexInformer that records what the
// typed wrapper hands to it; methods the tests do not use are left to the
// nil embedded interface.
type typedTestCaptureInformer struct {
	SharedIndexInformer
	handler  ResourceEventHandler
	options  HandlerOptions
	indexers Indexers
	indexer  Indexer
}

func (c *typedTestCaptureInformer) AddEventHandlerWithOptions(h ResourceEventHandler, o HandlerOptions) (ResourceEventHandlerRegistration, error) {
	c.handler, c.options = h, o
	return nil, nil
}

func (c *typedTestCaptureInformer) AddIndexers(indexers Indexers) error {
	c.indexers = indexers
	return nil
}

func (c *typedTestCaptureInformer) GetIndexer() Indexer { return c.indexer }

func TestH1_TypedResourceEventHandlerFuncs(t *testing.T) {
	pod, old := newTestPod("ns", "a", "2"), newTestPod("ns", "a", "1")
	var got []string
	funcs := TypedResourceEventHandlerFuncs[*v1.Pod]{
		AddFunc: func(obj *v1.Pod) { got = append(got, "add "+obj.Name) },
		UpdateFunc: func(o, n *v1.Pod) {
			got = append(got, "update "+o.ResourceVersion+"->"+n.ResourceVersion)
		},
		DeleteFunc: func(obj DeletedObject[*v1.Pod]) { got = append(got, "delete "+obj.GetKey()) },
	}
	var h TypedResourceEventHandler[*v1.Pod] = funcs
	h.OnAdd(pod, true)
	h.OnUpdate(old, pod)
	h.OnDelete(DeletedObject[*v1.Pod]{OptionalObj: pod})
	assert.Equal(t, []string{"add a", "update 1->2", "delete ns/a"}, got)

	var empty TypedResourceEventHandlerFuncs[*v1.Pod]
	assert.NotPanics(t, func() {
		empty.OnAdd(pod, false)
		empty.OnUpdate(old, pod)
		empty.OnDelete(DeletedObject[*v1.Pod]{})
	})
}

func TestH1_TypedResourceEventHandlerDetailedFuncsPassesInitialList(t *testing.T) {
	pod, old := newTestPod("ns", "a", "2"), newTestPod("ns", "a", "1")
	var got []string
	var h TypedResourceEventHandler[*v1.Pod] = TypedResourceEventHandlerDetailedFuncs[*v1.Pod]{
		AddFunc:    func(obj *v1.Pod, initial bool) { got = append(got, fmt.Sprintf("add %s %v", obj.Name, initial)) },
		UpdateFunc: func(o, n *v1.Pod) { got = append(got, "update "+o.ResourceVersion+"->"+n.ResourceVersion) },
		DeleteFunc: func(obj DeletedObject[*v1.Pod]) { got = append(got, "delete "+obj.GetKey()) },
	}
	h.OnAdd(pod, true)
	h.OnAdd(pod, false)
	h.OnUpdate(old, pod)
	h.OnDelete(DeletedObject[*v1.Pod]{OptionalObj: pod})
	assert.Equal(t, []string{"add a true", "add a false", "update 1->2", "delete ns/a"}, got)

	var empty TypedResourceEventHandlerDetailedFuncs[*v1.Pod]
	assert.NotPanics(t, func() {
		empty.OnAdd(pod, true)
		empty.OnUpdate(old, pod)
		empty.OnDelete(DeletedObject[*v1.Pod]{})
	})
}

func TestH2_TypedFilteringHandlerUpdateCases(t *testing.T) {
	in, out := newTestPod("ns", "in", "1", "keep", "yes"), newTestPod("ns", "out", "1")
	filter := func(p *v1.Pod) bool { return p != nil && p.Labels["keep"] == "yes" }
	cases := []struct {
		name     string
		old, new *v1.Pod
		want     []typedTestEvent
	}{
		{"both pass", in, in, []typedTestEvent{{kind: "update", old: in, obj: in}}},
		{"only new passes", out, in, []typedTestEvent{{kind: "add", obj: in, initial: false}}},
		{"only old passes", in, out, []typedTestEvent{{kind: "delete", deleted: DeletedObject[*v1.Pod]{OptionalObj: in}}}},
		{"neither passes", out, out, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &typedTestRecorder{}
			TypedFilteringResourceEventHandler[*v1.Pod]{FilterFunc: filter, Handler: rec}.OnUpdate(tc.old, tc.new)
			assert.Equal(t, tc.want, rec.events)
		})
	}
}

func TestH2_TypedFilteringHandlerAddAndDelete(t *testing.T) {
	in, out := newTestPod("ns", "in", "1", "keep", "yes"), newTestPod("ns", "out", "1")
	filter := func(p *v1.Pod) bool { return p != nil && p.Labels["keep"] == "yes" }
	rec := &typedTestRecorder{}
	h := TypedFilteringResourceEventHandler[*v1.Pod]{FilterFunc: filter, Handler: rec}

	h.OnAdd(in, true)
	h.OnAdd(out, true)
	tomb := &DeletedFinalStateUnknown{Key: "ns/in", Obj: in}
	h.OnDelete(DeletedObject[*v1.Pod]{OptionalObj: in, FinalStateUnknown: tomb})
	h.OnDelete(DeletedObject[*v1.Pod]{OptionalObj: out})
	// The filter sees OptionalObj, here nil: the key alone cannot pass it.
	h.OnDelete(DeletedObject[*v1.Pod]{FinalStateUnknown: &DeletedFinalStateUnknown{Key: "ns/in"}})

	assert.Equal(t, []typedTestEvent{
		{kind: "add", obj: in, initial: true},
		{kind: "delete", deleted: DeletedObject[*v1.Pod]{OptionalObj: in, FinalStateUnknown: tomb}},
	}, rec.events)
}

func TestH2_TypedFilteringHandlerNilFilterAndNilHandler(t *testing.T) {
	pod := newTestPod("ns", "a", "1")
	rec := &typedTestRecorder{}
	all := TypedFilteringResourceEventHandler[*v1.Pod]{Handler: rec}
	all.OnAdd(pod, false)
	all.OnUpdate(pod, pod)
	all.OnDelete(DeletedObject[*v1.Pod]{OptionalObj: pod})
	assert.Len(t, rec.events, 3, "a nil filter lets every event through")

	none := TypedFilteringResourceEventHandler[*v1.Pod]{FilterFunc: func(*v1.Pod) bool { return true }}
	assert.NotPanics(t, func() {
		none.OnAdd(pod, false)
		none.OnUpdate(pod, pod)
		none.OnDelete(DeletedObject[*v1.Pod]{OptionalObj: pod})
	})
}

func TestI20_AddTypedEventHandlerOptions(t *testing.T) {
	capture := &typedTestCaptureInformer{}
	informer := NewTypedSharedIndexInformer[*v1.Pod](capture)
	rec := &typedTestRecorder{}

	reg, err := informer.AddTypedEventHandler(rec, HandlerOptions{}, HandlerOptions{})
	assert.Nil(t, reg)
	require.EqualError(t, err, "at most one HandlerOptions may be passed, got 2")
	assert.Nil(t, capture.handler, "nothing is registered on error")

	_, err = informer.AddTypedEventHandler(rec)
	require.NoError(t, err)
	assert.Equal(t, HandlerOptions{}, capture.options)
	require.NotNil(t, capture.handler)

	period := 3 * time.Second
	_, err = informer.AddTypedEventHandler(rec, HandlerOptions{ResyncPeriod: &period})
	require.NoError(t, err)
	assert.Equal(t, &period, capture.options.ResyncPeriod)
}

// TestI20_TypedHandlerMatchesClientGo feeds the same untyped calls to our
// typed wrapper and to client-go's and compares what the typed handler sees.
func TestI20_TypedHandlerMatchesClientGo(t *testing.T) {
	ours, theirs := &typedTestCaptureInformer{}, &typedTestCaptureInformer{}
	oursRec, theirsRec := &typedTestRecorder{}, &typedTestRecorder{}
	_, err := NewTypedSharedIndexInformer[*v1.Pod](ours).AddTypedEventHandler(oursRec)
	require.NoError(t, err)
	_, err = clientcache.NewTypedSharedIndexInformer[*v1.Pod](theirs).AddTypedEventHandler(theirsRec)
	require.NoError(t, err)

	pod, old := newTestPod("ns", "a", "2"), newTestPod("ns", "a", "1")
	for _, h := range []ResourceEventHandler{ours.handler, theirs.handler} {
		h.OnAdd(pod, true)
		h.OnAdd(pod, false)
		h.OnUpdate(old, pod)
		h.OnDelete(pod)
		h.OnDelete(DeletedFinalStateUnknown{Key: "ns/a", Obj: old})
		h.OnDelete(DeletedFinalStateUnknown{Key: "ns/gone"})
	}
	assert.Equal(t, theirsRec.events, oursRec.events)
	require.Len(t, oursRec.events, 6)
	assert.Equal(t, DeletedObject[*v1.Pod]{OptionalObj: old, FinalStateUnknown: &DeletedFinalStateUnknown{Key: "ns/a", Obj: old}}, oursRec.events[4].deleted)
	assert.Equal(t, "ns/gone", oursRec.events[5].deleted.GetKey())
	assert.Nil(t, oursRec.events[5].deleted.OptionalObj)
}

func TestI20_TypedHandlerSkipsObjectsOfOtherTypes(t *testing.T) {
	capture := &typedTestCaptureInformer{}
	rec := &typedTestRecorder{}
	_, err := NewTypedSharedIndexInformer[*v1.Pod](capture).AddTypedEventHandler(rec)
	require.NoError(t, err)
	h := capture.handler
	pod := newTestPod("ns", "a", "1")
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}

	require.NotPanics(t, func() {
		h.OnAdd(cm, true)
		h.OnAdd(nil, false)
		h.OnUpdate(cm, pod)
		h.OnUpdate(pod, cm)
		h.OnDelete(cm)
		h.OnDelete(DeletedFinalStateUnknown{Key: "ns/cm", Obj: cm})
		h.OnDelete("no metadata")
	})
	// Adds and updates of other types are dropped; deletes still reach the
	// handler by key so it can forget the object.
	assert.Equal(t, []typedTestEvent{
		{kind: "delete", deleted: DeletedObject[*v1.Pod]{FinalStateUnknown: &DeletedFinalStateUnknown{Key: "ns/cm", Obj: cm}}},
		{kind: "delete", deleted: DeletedObject[*v1.Pod]{FinalStateUnknown: &DeletedFinalStateUnknown{Key: "ns/cm", Obj: cm}}},
	}, rec.events)
}

func TestI20_AddTypedIndexersConvertsFunctions(t *testing.T) {
	capture := &typedTestCaptureInformer{}
	informer := NewTypedSharedIndexInformer[*v1.Pod](capture)
	require.NoError(t, informer.AddTypedIndexers(TypedIndexers[*v1.Pod]{
		"node": func(p *v1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil },
	}))
	require.Contains(t, capture.indexers, "node")
	pod := newTestPod("ns", "a", "1")
	pod.Spec.NodeName = "n1"
	values, err := capture.indexers["node"](pod)
	require.NoError(t, err)
	assert.Equal(t, []string{"n1"}, values)

	_, err = capture.indexers["node"](&v1.ConfigMap{})
	assert.Error(t, err, "an object of another type is an error, not a panic")
}

func TestI20_TypedIndexerReads(t *testing.T) {
	backing := NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	a, b, c := newTestPod("ns1", "a", "1"), newTestPod("ns1", "b", "1"), newTestPod("ns2", "c", "1")
	for _, p := range []*v1.Pod{a, b, c} {
		require.NoError(t, backing.Add(p))
	}
	idx := NewTypedSharedIndexInformer[*v1.Pod](&typedTestCaptureInformer{indexer: backing}).GetTypedIndexer()

	got, err := idx.ByTypedIndex(NamespaceIndex, "ns1")
	require.NoError(t, err)
	assert.ElementsMatch(t, []*v1.Pod{a, b}, got)

	got, err = idx.TypedIndex(NamespaceIndex, newTestPod("ns2", "x", "1"))
	require.NoError(t, err)
	assert.Equal(t, []*v1.Pod{c}, got)

	got, err = idx.ByTypedIndex(NamespaceIndex, "nowhere")
	require.NoError(t, err)
	assert.NotNil(t, got)
	assert.Empty(t, got)

	_, err = idx.ByTypedIndex("missing", "ns1")
	assert.EqualError(t, err, "Index with name missing does not exist")

	require.NoError(t, idx.AddTypedIndexers(TypedIndexers[*v1.Pod]{
		"name": func(p *v1.Pod) ([]string, error) { return []string{p.Name}, nil },
	}))
	got, err = idx.ByTypedIndex("name", "c")
	require.NoError(t, err)
	assert.Equal(t, []*v1.Pod{c}, got)
	assert.Contains(t, backing.GetIndexers(), "name", "the indexers land on the wrapped indexer")
}

func TestI20_TypedIndexerReportsObjectsOfOtherTypes(t *testing.T) {
	backing := NewIndexer(MetaNamespaceKeyFunc, Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	require.NoError(t, backing.Add(newTestPod("ns", "a", "1")))
	require.NoError(t, backing.Add(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}))
	idx := NewTypedSharedIndexInformer[*v1.Pod](&typedTestCaptureInformer{indexer: backing}).GetTypedIndexer()

	_, err := idx.ByTypedIndex(NamespaceIndex, "ns")
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "*v1.ConfigMap"), err.Error())
}

// TestI20_TypedInformerEndToEnd runs a real informer under the typed wrapper.
func TestI20_TypedInformerEndToEnd(t *testing.T) {
	defer goleak.VerifyNone(t)
	// In a bubble: the relist after the expired watch waits out the
	// Reflector's pause between attempts, on the bubble's fake clock.
	synctest.Test(t, func(t *testing.T) {
		source := fcache.NewFakeControllerSource()
		defer source.Shutdown()
		source.Add(newTestPod("ns", "a", ""))

		informer := NewTypedSharedIndexInformer[*v1.Pod](NewSharedIndexInformer(source, &v1.Pod{}, 0, Indexers{}))
		rec := &typedTestRecorder{ch: make(chan typedTestEvent, 10)}
		_, err := informer.AddTypedEventHandler(rec)
		require.NoError(t, err)
		require.NoError(t, informer.AddTypedIndexers(TypedIndexers[*v1.Pod]{
			"node": func(p *v1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil },
		}))

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); informer.RunWithContext(ctx) }()
		defer func() { cancel(); <-done }()

		next := func() typedTestEvent {
			select {
			case e := <-rec.ch:
				return e
			case <-time.After(10 * time.Second):
				t.Fatal("timed out waiting for an event")
				return typedTestEvent{}
			}
		}
		e := next()
		assert.Equal(t, "add", e.kind)
		assert.True(t, e.initial)
		assert.Equal(t, "a", e.obj.Name)

		moved := e.obj.DeepCopy()
		moved.Spec.NodeName = "n1"
		source.Modify(moved)
		e = next()
		assert.Equal(t, "update", e.kind)
		assert.Equal(t, "n1", e.obj.Spec.NodeName)

		onNode, err := informer.GetTypedIndexer().ByTypedIndex("node", "n1")
		require.NoError(t, err)
		require.Len(t, onNode, 1)
		assert.Equal(t, "a", onNode[0].Name)

		source.Delete(moved)
		e = next()
		assert.Equal(t, "delete", e.kind)
		assert.Nil(t, e.deleted.FinalStateUnknown)
		assert.Equal(t, "ns/a", e.deleted.GetKey())

		// A deletion the watch never reports is found by the relist that follows
		// the expired watch, and arrives as a tombstone holding the last copy.
		source.Add(newTestPod("ns", "b", ""))
		e = next()
		require.Equal(t, "add", e.kind)
		lastSeen := e.obj
		source.DeleteDropWatch(lastSeen.DeepCopy())
		source.ResetWatch()
		e = next()
		assert.Equal(t, "delete", e.kind)
		require.NotNil(t, e.deleted.FinalStateUnknown)
		assert.Equal(t, "ns/b", e.deleted.GetKey())
		assert.Same(t, lastSeen, e.deleted.OptionalObj)
	})
}

func TestI20_DeletedObjectNamesAndKeys(t *testing.T) {
	pod := newTestPod("ns", "a", "1")
	cases := []struct {
		name    string
		deleted DeletedObject[*v1.Pod]
		key     string
		ns, n   string
	}{
		{"object", DeletedObject[*v1.Pod]{OptionalObj: pod}, "ns/a", "ns", "a"},
		{"cluster-scoped object", DeletedObject[*v1.Pod]{OptionalObj: newTestPod("", "c", "1")}, "c", "", "c"},
		{"tombstone key wins", DeletedObject[*v1.Pod]{OptionalObj: pod, FinalStateUnknown: &DeletedFinalStateUnknown{Key: "other/b"}}, "other/b", "other", "b"},
		{"tombstone key split at the first slash", DeletedObject[*v1.Pod]{FinalStateUnknown: &DeletedFinalStateUnknown{Key: "x/y/z"}}, "x/y/z", "x", "y/z"},
		{"tombstone key without slash", DeletedObject[*v1.Pod]{FinalStateUnknown: &DeletedFinalStateUnknown{Key: "solo"}}, "solo", "", "solo"},
		{"zero value", DeletedObject[*v1.Pod]{}, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.key, tc.deleted.GetKey())
			assert.Equal(t, ObjectName{Namespace: tc.ns, Name: tc.n}, tc.deleted.GetObjectName())
			assert.Equal(t, tc.ns, tc.deleted.GetNamespace())
			assert.Equal(t, tc.n, tc.deleted.GetName())
		})
	}
}
