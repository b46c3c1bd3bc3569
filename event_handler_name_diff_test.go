package cache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	clientcache "k8s.io/client-go/tools/cache"
)

type pointerNameHandler struct{}

func (*pointerNameHandler) OnAdd(interface{}, bool)           {}
func (*pointerNameHandler) OnUpdate(interface{}, interface{}) {}
func (*pointerNameHandler) OnDelete(interface{})              {}

// handlerNamePair is one handler as a user would write it against each
// package: the import swap turns the second into the first.
type handlerNamePair struct {
	ours, theirs ResourceEventHandler
}

func handlerNamePairs() map[string]handlerNamePair {
	add := func(interface{}) {}
	detailedAdd := func(interface{}, bool) {}
	filter := func(interface{}) bool { return true }
	inner := &nameTestHandler{}
	return map[string]handlerNamePair{
		"funcs":        {ResourceEventHandlerFuncs{AddFunc: add}, clientcache.ResourceEventHandlerFuncs{AddFunc: add}},
		"funcs ptr":    {&ResourceEventHandlerFuncs{AddFunc: add}, &clientcache.ResourceEventHandlerFuncs{AddFunc: add}},
		"no funcs":     {ResourceEventHandlerFuncs{}, clientcache.ResourceEventHandlerFuncs{}},
		"detailed":     {ResourceEventHandlerDetailedFuncs{AddFunc: detailedAdd}, clientcache.ResourceEventHandlerDetailedFuncs{AddFunc: detailedAdd}},
		"detailed ptr": {&ResourceEventHandlerDetailedFuncs{}, &clientcache.ResourceEventHandlerDetailedFuncs{}},
		"filtering":    {FilteringResourceEventHandler{FilterFunc: filter, Handler: inner}, clientcache.FilteringResourceEventHandler{FilterFunc: filter, Handler: inner}},
		"filtering ptr": {&FilteringResourceEventHandler{FilterFunc: filter, Handler: inner},
			&clientcache.FilteringResourceEventHandler{FilterFunc: filter, Handler: inner}},
		"user struct":     {nameTestHandler{}, nameTestHandler{}},
		"user ptr":        {inner, inner},
		"user nil ptr":    {(*pointerNameHandler)(nil), (*pointerNameHandler)(nil)},
		"client-go funcs": {clientcache.ResourceEventHandlerFuncs{AddFunc: add}, clientcache.ResourceEventHandlerFuncs{AddFunc: add}},
	}
}

func newNameTestInformers() (SharedIndexInformer, clientcache.SharedIndexInformer) {
	return NewSharedIndexInformer(&ListWatch{}, &v1.Pod{}, 0, Indexers{}),
		clientcache.NewSharedIndexInformer(&clientcache.ListWatch{}, &v1.Pod{}, 0, clientcache.Indexers{})
}

// TestHandlerNamesMatchClientGo registers the same handlers on both
// informers and requires the names their sync checkers carry (the names
// WaitFor logs and lag metrics use) to be identical.
func TestHandlerNamesMatchClientGo(t *testing.T) {
	ours, theirs := newNameTestInformers()
	for name, pair := range handlerNamePairs() {
		t.Run(name, func(t *testing.T) {
			want, err := theirs.AddEventHandler(pair.theirs)
			require.NoError(t, err)
			got, err := ours.AddEventHandler(pair.ours)
			require.NoError(t, err)
			assert.Equal(t, want.HasSyncedChecker().Name(), got.HasSyncedChecker().Name())
		})
	}
}

func TestTypedHandlerNamesMatchClientGo(t *testing.T) {
	ours, theirs := newNameTestInformers()
	add := func(*v1.Pod) {}
	for name, pair := range map[string]struct {
		ours   TypedResourceEventHandler[*v1.Pod]
		theirs clientcache.TypedResourceEventHandler[*v1.Pod]
	}{
		"funcs":     {TypedResourceEventHandlerFuncs[*v1.Pod]{AddFunc: add}, clientcache.TypedResourceEventHandlerFuncs[*v1.Pod]{AddFunc: add}},
		"detailed":  {TypedResourceEventHandlerDetailedFuncs[*v1.Pod]{}, clientcache.TypedResourceEventHandlerDetailedFuncs[*v1.Pod]{}},
		"filtering": {TypedFilteringResourceEventHandler[*v1.Pod]{}, clientcache.TypedFilteringResourceEventHandler[*v1.Pod]{}},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := clientcache.NewTypedSharedIndexInformer[*v1.Pod](theirs).AddTypedEventHandler(pair.theirs)
			require.NoError(t, err)
			got, err := NewTypedSharedIndexInformer[*v1.Pod](ours).AddTypedEventHandler(pair.ours)
			require.NoError(t, err)
			assert.Equal(t, want.HasSyncedChecker().Name(), got.HasSyncedChecker().Name())
		})
	}
}

// TestTypedNilHandlerRefused: a nil pointer to a value-receiver handler
// can never be called, so it is refused like an untyped nil, while a nil
// pointer whose methods accept it stays a valid handler.
func TestTypedNilHandlerRefused(t *testing.T) {
	ours, _ := newNameTestInformers()
	for _, h := range []ResourceEventHandler{
		nil,
		(*ResourceEventHandlerFuncs)(nil),
		(*ResourceEventHandlerDetailedFuncs)(nil),
		(*FilteringResourceEventHandler)(nil),
		(*clientcache.ResourceEventHandlerFuncs)(nil),
		(*nameTestHandler)(nil),
	} {
		_, err := ours.AddEventHandler(h)
		assert.EqualError(t, err, "handler must not be nil", "%T", h)
	}
	_, err := ours.AddEventHandler((*pointerNameHandler)(nil))
	assert.NoError(t, err)
}
