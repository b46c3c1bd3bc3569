package sharding

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache"
)

// Mode says who filters a sharded ListerWatcher's objects.
type Mode int

const (
	// ModePending: no LIST or watch-list has completed yet.
	ModePending Mode = iota
	// ModeServer: the API server applies the shard selector (feature gate
	// ShardedListAndWatch on); each replica receives only its share.
	ModeServer
	// ModeClient: the server ignored or rejected the shard selector, so every object
	// arrives and the ListerWatcher drops the ones outside the shard.
	ModeClient
)

// String names the mode in logs.
func (m Mode) String() string {
	switch m {
	case ModeServer:
		return "server"
	case ModeClient:
		return "client"
	}
	return "pending"
}

// ListWatch is a ListerWatcher restricted to one shard of a collection. It asks the
// server to filter (ListOptions.ShardSelector on every LIST, WATCH and watch-list request)
// and also checks every object it passes on against the same hash, so its consumer sees only
// the shard's objects whether the server filters, ignores the selector or rejects it.
type ListWatch struct {
	lw     cache.ListerWatcherWithContext
	inner  cache.ListerWatcher
	filter atomic.Pointer[shardFilter] // replaced whole when the shard narrows

	mu       sync.Mutex
	mode     Mode
	rejected bool // the server refused the selector: requests go out without it
}

// shardFilter is one shard as requests carry it and as objects are checked against it.
type shardFilter struct {
	shard    Shard
	expr     string
	selector apisharding.Selector
}

func newShardFilter(shard Shard) (*shardFilter, error) {
	reqs, err := shard.requirements()
	if err != nil {
		return nil, err
	}
	sel := apisharding.NewSelector(reqs...)
	return &shardFilter{shard: shard, expr: sel.String(), selector: sel}, nil
}

// owns is ListWatch.Owns for this filter.
func (f *shardFilter) owns(obj runtime.Object) bool {
	ok, err := f.selector.Matches(obj)
	return ok || err != nil
}

var (
	_ cache.ListerWatcher            = (*ListWatch)(nil)
	_ cache.ListerWatcherWithContext = (*ListWatch)(nil)
)

// NewListWatch wraps lw so that it lists and watches only shard's objects. A malformed
// shard is an error here rather than on the first request.
func NewListWatch(lw cache.ListerWatcher, shard Shard) (*ListWatch, error) {
	if lw == nil {
		return nil, errors.New("sharded cache.ListerWatcher: nil ListerWatcher")
	}
	f, err := newShardFilter(shard)
	if err != nil {
		return nil, err
	}
	s := &ListWatch{lw: cache.ToListerWatcherWithContext(lw), inner: lw}
	s.filter.Store(f)
	return s, nil
}

// narrow restricts the ListerWatcher to shard, whose hashes it already covers (the caller
// checks), without a new request: objects and events outside it are dropped from now on, and
// later requests carry its selector. Objects passed on before stay with the consumer.
func (s *ListWatch) narrow(shard Shard) error {
	f, err := newShardFilter(shard)
	if err != nil {
		return err
	}
	s.filter.Store(f)
	return nil
}

// shard returns the current shard.
func (s *ListWatch) shard() Shard { return s.filter.Load().shard }

// Selector returns the shard selector sent to the server; its String is the expression.
func (s *ListWatch) Selector() apisharding.Selector { return s.filter.Load().selector }

// Mode reports who filters the objects, as last observed.
func (s *ListWatch) Mode() Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// Owns reports whether obj belongs to this shard. An object whose metadata cannot be read
// is owned, so that it reaches the store and fails there with a clear error instead of
// vanishing here.
func (s *ListWatch) Owns(obj runtime.Object) bool {
	return s.filter.Load().owns(obj)
}

// IsWatchListSemanticsUnSupported forwards the wrapped ListerWatcher's answer, so a
// reflector streams (or not) exactly as it would without sharding.
func (s *ListWatch) IsWatchListSemanticsUnSupported() bool {
	u, ok := s.inner.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

// List lists the shard's objects.
func (s *ListWatch) List(options metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), options)
}

// ListWithContext lists the shard's objects.
func (s *ListWatch) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	requested := s.filter.Load()
	list, err := sendSharded(s, requested, options, func(o metav1.ListOptions) (runtime.Object, error) {
		return s.lw.ListWithContext(ctx, o)
	})
	if err != nil {
		return nil, err
	}
	foreign, err := s.dropForeignItems(list, requested)
	if err != nil {
		return nil, err
	}
	s.observeList(list, foreign)
	return list, nil
}

// Watch watches the shard's objects.
func (s *ListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), options)
}

// WatchWithContext watches the shard's objects; events for other objects are dropped.
func (s *ListWatch) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	requested := s.filter.Load()
	w, err := sendSharded(s, requested, options, func(o metav1.ListOptions) (watch.Interface, error) {
		return s.lw.WatchWithContext(ctx, o)
	})
	if err != nil {
		return nil, err
	}
	return newShardWatch(w, s, requested), nil
}

// sendSharded sends a request with the requested shard's selector, unless the server has
// refused it before; a refusal now is remembered and the request is sent again without it.
func sendSharded[T any](s *ListWatch, requested *shardFilter, options metav1.ListOptions, send func(metav1.ListOptions) (T, error)) (T, error) {
	s.mu.Lock()
	rejected := s.rejected
	s.mu.Unlock()
	if rejected {
		options.ShardSelector = ""
		return send(options)
	}
	options.ShardSelector = requested.expr
	res, err := send(options)
	if err == nil || !rejectsShardSelector(err) {
		return res, err
	}
	s.mu.Lock()
	s.rejected = true
	s.setModeLocked(ModeClient, "the server rejected the shard selector: "+err.Error())
	s.mu.Unlock()
	options.ShardSelector = ""
	return send(options)
}

// rejectsShardSelector recognises a server refusing the shard selector: a failed request whose
// message is about it. Other errors (timeouts, 410, 429) go back to the caller unchanged.
func rejectsShardSelector(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	st := status.Status()
	switch st.Code {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusInternalServerError:
		return strings.Contains(strings.ToLower(st.Message), "shard")
	}
	return false
}

// dropForeignItems removes the items outside the shard from list and counts those outside
// the requested one: a shard narrowed since the request drops more than the server should have.
func (s *ListWatch) dropForeignItems(list runtime.Object, requested *shardFilter) (int, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return 0, err
	}
	current := s.filter.Load()
	kept, foreign := items[:0:0], 0
	for _, item := range items {
		switch {
		case current.owns(item):
			kept = append(kept, item)
		case !requested.owns(item):
			foreign++
		}
	}
	if len(kept) == len(items) {
		return 0, nil
	}
	return foreign, meta.SetList(list, kept)
}

// observeList updates the mode from a LIST answer: foreign items prove the server ignored the
// selector; an echoed shardInfo proves it applied it.
func (s *ListWatch) observeList(list runtime.Object, foreign int) {
	echoed := false
	if l, ok := list.(interface{ GetShardInfo() *metav1.ShardInfo }); ok {
		echoed = l.GetShardInfo() != nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.rejected:
	case foreign > 0:
		s.setModeLocked(ModeClient, "the server ignored the shard selector: objects outside the shard arrived")
	case echoed || s.mode == ModePending:
		s.setModeLocked(ModeServer, "the server applies the shard selector")
	}
}

// observeForeignEvent records a watch event for an object outside the shard.
func (s *ListWatch) observeForeignEvent() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.rejected {
		s.setModeLocked(ModeClient, "the server ignored the shard selector: events for objects outside the shard arrived")
	}
}

// observeInitialEventsEnd records the end of a watch-list's initial state, which served as a
// LIST; foreign events among it were already recorded one by one.
func (s *ListWatch) observeInitialEventsEnd() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode == ModePending {
		s.setModeLocked(ModeServer, "the server applies the shard selector")
	}
}

// setModeLocked logs each change of mode once.
func (s *ListWatch) setModeLocked(m Mode, why string) {
	if s.mode == m {
		return
	}
	s.mode = m
	klog.Background().Info("Sharded ListerWatcher filtering mode", "mode", m, "reason", why, "shardSelector", s.filter.Load().expr)
}
