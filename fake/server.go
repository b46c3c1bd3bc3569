package fake

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Options configure a Server. The zero value is not usable: set Object or GroupVersionKind.
type Options struct {
	// Object is a prototype of the served type, for example &corev1.Pod{}. Leave it nil (or pass an
	// *unstructured.Unstructured) and set GroupVersionKind to serve unstructured objects.
	Object runtime.Object
	// GroupVersionKind names the served kind. For typed objects it is looked up in Scheme when empty.
	GroupVersionKind schema.GroupVersionKind
	// Resource is the plural resource name, used in error messages (NotFound, Conflict) and in a
	// Cluster's URLs. Defaults to the lower-case kind made plural the way client-go's
	// meta.UnsafeGuessKindToResource does (Pod → pods, NetworkPolicy → networkpolicies); set it
	// for irregular plurals such as Endpoints.
	Resource string
	// Scheme resolves typed objects; defaults to client-go's kubernetes scheme.
	Scheme *runtime.Scheme
	// ClusterScoped serves a cluster-scoped resource (namespaces are cleared on create, as the API
	// server does); the default is namespaced.
	ClusterScoped bool
	// Clock drives bookmarks, watch timeouts and creation timestamps. Defaults to the real clock;
	// tests pass a k8s.io/utils/clock/testing FakeClock.
	Clock clock.Clock
	// HistorySize is how many past events the server keeps, like the API server's watch cache
	// window: watches and exact-RV lists older than that get 410. Defaults to 1024.
	HistorySize int
	// BookmarkInterval is how often a watch that allows bookmarks gets one (the API server sends
	// one roughly every minute, and 2s before the watch times out). Defaults to one minute.
	BookmarkInterval time.Duration
	// DefaultWatchTimeout, when set, closes watches that ask for no TimeoutSeconds after that
	// long (a real server uses --min-request-timeout, 30 to 60 minutes). Zero means never.
	DefaultWatchTimeout time.Duration
	// WatchListUnsupported makes IsWatchListSemanticsUnSupported report true and makes the server
	// reject sendInitialEvents like an API server with the WatchList feature gate off.
	WatchListUnsupported bool
	// Fields adds field-selector support for more fields than metadata.name and
	// metadata.namespace (for example "spec.nodeName" for pods). Unknown fields are rejected with
	// 400, as the API server does.
	Fields map[string]func(obj runtime.Object) string
	// ShardSelectors is how ListOptions.ShardSelector is treated: applied (the default, like the
	// ShardedListAndWatch feature gate on), ignored (gate off) or rejected.
	ShardSelectors ShardSelectorSupport
	// StatusSubresource serves a status subresource, as most built-in kinds and custom resources
	// with subresources.status do: Update and Patch keep the stored status, UpdateStatus and
	// PatchStatus change only the status. Without it UpdateStatus and PatchStatus are NotFound.
	StatusSubresource bool
	// Objects are loaded at start, as if the server had just listed them from storage: they get
	// new resourceVersions (any they carry is replaced) and the history window starts after them.
	Objects []runtime.Object
}

// The fake plugs in wherever client-go's (and openinformer's) ListerWatcher goes.
var (
	_ clientcache.ListerWatcherWithContext = (*Server)(nil)
	_ clientcache.ListerWatcher            = (*Server)(nil)
	_ clientcache.ListerWatcherWithContext = (*NamespaceView)(nil)
	_ clientcache.ListerWatcher            = (*NamespaceView)(nil)
)

// Server is an in-memory API server for one resource. It implements client-go's ListerWatcher
// and ListerWatcherWithContext for all namespaces; Namespace gives a view of one namespace.
// All methods are safe for concurrent use.
type Server struct {
	kind    kindInfo
	clock   clock.Clock
	opts    Options
	fields  map[string]func(obj runtime.Object) string
	mu      sync.Mutex
	rv      uint64
	floor   uint64 // oldest resourceVersion a watch or exact list may start from
	objects map[string]runtime.Object
	history []event
	uidSeq  uint64

	watchers    map[*watcher]struct{}
	listFaults  []faultRun
	watchFaults []faultRun
	streamFaults
	requests []Request

	gateMu sync.Mutex
	gate   chan struct{} // non-nil while event delivery is held; closed on release
}

// event is one change in the history; obj is the state after the change (for a delete, the last
// state carrying the delete's resourceVersion), prev the state before (nil for an add).
type event struct {
	rv   uint64
	key  string
	typ  watch.EventType
	obj  runtime.Object
	prev runtime.Object
}

// kindInfo describes the served kind.
type kindInfo struct {
	gvk          schema.GroupVersionKind
	resource     schema.GroupResource
	unstructured bool
	goType       reflect.Type
	newObj       func() runtime.Object
	newList      func() runtime.Object
}

// New builds a Server. It fails when the kind is unknown to the scheme or cannot be listed.
func New(opts Options) (*Server, error) {
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.HistorySize <= 0 {
		opts.HistorySize = 1024
	}
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = time.Minute
	}
	k, err := resolveKind(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{
		kind:     k,
		clock:    opts.Clock,
		opts:     opts,
		fields:   opts.Fields,
		rv:       1,
		objects:  map[string]runtime.Object{},
		watchers: map[*watcher]struct{}{},
	}
	for _, obj := range opts.Objects {
		if err := s.seed(obj); err != nil {
			return nil, fmt.Errorf("fake: loading initial object: %w", err)
		}
	}
	s.history = nil
	s.floor = s.rv
	return s, nil
}

// seed creates an initial object; a resourceVersion it carries is replaced, not rejected.
func (s *Server) seed(obj runtime.Object) error {
	if m, ok := obj.(metav1.Object); ok && m.GetResourceVersion() != "" {
		obj = obj.DeepCopyObject()
		obj.(metav1.Object).SetResourceVersion("")
	}
	_, err := s.Create(obj)
	return err
}

// MustNew is New for tests: it panics on a configuration error.
func MustNew(opts Options) *Server {
	s, err := New(opts)
	if err != nil {
		panic(err)
	}
	return s
}

func resolveKind(opts Options) (kindInfo, error) {
	_, isUnstructured := opts.Object.(*unstructured.Unstructured)
	if opts.Object == nil || isUnstructured {
		return unstructuredKind(opts)
	}
	gvks, _, err := opts.Scheme.ObjectKinds(opts.Object)
	if err != nil {
		return kindInfo{}, fmt.Errorf("fake: unknown kind for %T: %w", opts.Object, err)
	}
	gvk := opts.GroupVersionKind
	if gvk.Empty() {
		gvk = gvks[0]
	}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if _, err := opts.Scheme.New(listGVK); err != nil {
		return kindInfo{}, fmt.Errorf("fake: kind %v has no list kind in the scheme: %w", gvk, err)
	}
	proto := opts.Object
	return kindInfo{
		gvk:      gvk,
		resource: resourceFor(gvk, opts.Resource),
		goType:   reflect.TypeOf(proto),
		newObj: func() runtime.Object {
			obj, _ := opts.Scheme.New(gvk)
			return obj
		},
		newList: func() runtime.Object {
			list, _ := opts.Scheme.New(listGVK)
			return list
		},
	}, nil
}

func unstructuredKind(opts Options) (kindInfo, error) {
	gvk := opts.GroupVersionKind
	if opts.Object == nil && gvk.Empty() {
		return kindInfo{}, errNoKind
	}
	if gvk.Kind == "" || gvk.Version == "" {
		return kindInfo{}, fmt.Errorf("fake: unstructured objects need Options.GroupVersionKind with a version and kind, got %q", gvk.String())
	}
	return kindInfo{
		gvk:          gvk,
		resource:     resourceFor(gvk, opts.Resource),
		unstructured: true,
		goType:       reflect.TypeOf(&unstructured.Unstructured{}),
		newObj: func() runtime.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		},
		newList: func() runtime.Object {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			return l
		},
	}, nil
}

// errNoKind is New's answer to Options that name no type at all, the usual first mistake.
var errNoKind = errors.New("fake: Options.Object is nil: set it to a prototype of the served type " +
	"(for example &corev1.Pod{}), or leave it nil and set Options.GroupVersionKind to serve unstructured objects")

func resourceFor(gvk schema.GroupVersionKind, resource string) schema.GroupResource {
	if resource == "" {
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		resource = plural.Resource
	}
	return schema.GroupResource{Group: gvk.Group, Resource: resource}
}

// GroupVersionKind returns the served kind.
func (s *Server) GroupVersionKind() schema.GroupVersionKind { return s.kind.gvk }

// ResourceVersion returns the server's current resourceVersion.
func (s *Server) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return formatRV(s.rv)
}

// Objects returns deep copies of every stored object, ordered by namespace/name.
func (s *Server) Objects() []runtime.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := sortedKeys(s.objects)
	out := make([]runtime.Object, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.objects[k].DeepCopyObject())
	}
	return out
}

// IsWatchListSemanticsUnSupported reports Options.WatchListUnsupported. client-go's reflector
// reads it to decide between watch-list streaming and LIST.
func (s *Server) IsWatchListSemanticsUnSupported() bool { return s.opts.WatchListUnsupported }

// List serves a LIST across all namespaces.
func (s *Server) List(options metav1.ListOptions) (runtime.Object, error) {
	return s.list(context.Background(), "", options)
}

// ListWithContext serves a LIST across all namespaces.
func (s *Server) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	return s.list(ctx, "", options)
}

// Watch starts a WATCH across all namespaces.
func (s *Server) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return s.watch(context.Background(), "", options)
}

// WatchWithContext starts a WATCH across all namespaces; the watch ends when ctx is done.
func (s *Server) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return s.watch(ctx, "", options)
}

// Namespace returns a ListerWatcher limited to one namespace, like a client scoped with
// Namespace(ns). Requests it serves are recorded on the Server with that namespace.
func (s *Server) Namespace(ns string) *NamespaceView { return &NamespaceView{s: s, ns: ns} }

// NamespaceView is a ListerWatcher over one namespace of a Server.
type NamespaceView struct {
	s  *Server
	ns string
}

// IsWatchListSemanticsUnSupported reports the server's Options.WatchListUnsupported.
func (v *NamespaceView) IsWatchListSemanticsUnSupported() bool {
	return v.s.IsWatchListSemanticsUnSupported()
}

// List serves a LIST in the view's namespace.
func (v *NamespaceView) List(options metav1.ListOptions) (runtime.Object, error) {
	return v.s.list(context.Background(), v.ns, options)
}

// ListWithContext serves a LIST in the view's namespace.
func (v *NamespaceView) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	return v.s.list(ctx, v.ns, options)
}

// Watch starts a WATCH in the view's namespace.
func (v *NamespaceView) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return v.s.watch(context.Background(), v.ns, options)
}

// WatchWithContext starts a WATCH in the view's namespace; it ends when ctx is done.
func (v *NamespaceView) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return v.s.watch(ctx, v.ns, options)
}

// appendEventLocked records a change, trims the history to its window and fans the change out
// to every open watch. The caller holds s.mu and has already updated s.objects and s.rv.
func (s *Server) appendEventLocked(ev event) {
	s.history = append(s.history, ev)
	if over := len(s.history) - s.opts.HistorySize; over > 0 {
		s.floor = s.history[over-1].rv
		clear(s.history[:over]) // let the dropped objects go; append reallocates the rest later
		s.history = s.history[over:]
	}
	for w := range s.watchers {
		w.offer(ev)
	}
}

// stateAtLocked returns the objects as they were at rv (floor <= rv <= s.rv) by undoing newer
// events. The map is the live one when rv is current: callers must not modify it.
func (s *Server) stateAtLocked(rv uint64) map[string]runtime.Object {
	if rv >= s.rv {
		return s.objects
	}
	state := make(map[string]runtime.Object, len(s.objects))
	for k, v := range s.objects {
		state[k] = v
	}
	for i := len(s.history) - 1; i >= 0 && s.history[i].rv > rv; i-- {
		ev := s.history[i]
		if ev.prev == nil {
			delete(state, ev.key)
		} else {
			state[ev.key] = ev.prev
		}
	}
	return state
}

func sortedKeys(m map[string]runtime.Object) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// objectKey is the storage key, namespace/name or name; etcd orders lists by it.
func objectKey(m metav1.Object) string {
	if ns := m.GetNamespace(); ns != "" {
		return ns + "/" + m.GetName()
	}
	return m.GetName()
}

// metaOf reads the metadata of a stored object; every write checked that it has some.
func metaOf(obj runtime.Object) metav1.Object { return obj.(metav1.Object) }
