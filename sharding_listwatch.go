package cache

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// ShardMode says who filters a sharded ListerWatcher's objects.
type ShardMode int

const (
	// ShardModePending: no LIST or watch-list has completed yet.
	ShardModePending ShardMode = iota
	// ShardModeServer: the API server applies the shard selector (feature gate
	// ShardedListAndWatch on); each replica receives only its share.
	ShardModeServer
	// ShardModeClient: the server ignored or rejected the shard selector, so every object
	// arrives and the ListerWatcher drops the ones outside the shard.
	ShardModeClient
)

// String names the mode in logs.
func (m ShardMode) String() string {
	switch m {
	case ShardModeServer:
		return "server"
	case ShardModeClient:
		return "client"
	}
	return "pending"
}

// ShardedListWatch is a ListerWatcher restricted to one shard of a collection. It asks the
// server to filter (ListOptions.ShardSelector on every LIST, WATCH and watch-list request)
// and also checks every object it passes on against the same hash, so its consumer sees only
// the shard's objects whether the server filters, ignores the selector or rejects it.
type ShardedListWatch struct {
	lw       ListerWatcherWithContext
	inner    ListerWatcher
	expr     string
	selector apisharding.Selector

	mu       sync.Mutex
	mode     ShardMode
	rejected bool // the server refused the selector: requests go out without it
}

var (
	_ ListerWatcher            = (*ShardedListWatch)(nil)
	_ ListerWatcherWithContext = (*ShardedListWatch)(nil)
)

// NewShardedListWatch wraps lw so that it lists and watches only shard's objects. A malformed
// shard is an error here rather than on the first request.
func NewShardedListWatch(lw ListerWatcher, shard Shard) (*ShardedListWatch, error) {
	if lw == nil {
		return nil, errors.New("sharded ListerWatcher: nil ListerWatcher")
	}
	reqs, err := shard.requirements()
	if err != nil {
		return nil, err
	}
	sel := apisharding.NewSelector(reqs...)
	return &ShardedListWatch{lw: ToListerWatcherWithContext(lw), inner: lw, expr: sel.String(), selector: sel}, nil
}

// Selector returns the shard selector expression sent to the server.
func (s *ShardedListWatch) Selector() string { return s.expr }

// Mode reports who filters the objects, as last observed.
func (s *ShardedListWatch) Mode() ShardMode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// Owns reports whether obj belongs to this shard. An object whose metadata cannot be read
// is owned, so that it reaches the store and fails there with a clear error instead of
// vanishing here.
func (s *ShardedListWatch) Owns(obj runtime.Object) bool {
	ok, err := s.selector.Matches(obj)
	return ok || err != nil
}

// IsWatchListSemanticsUnSupported forwards the wrapped ListerWatcher's answer, so a
// reflector streams (or not) exactly as it would without sharding.
func (s *ShardedListWatch) IsWatchListSemanticsUnSupported() bool {
	u, ok := s.inner.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

// List lists the shard's objects.
func (s *ShardedListWatch) List(options metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), options)
}

// ListWithContext lists the shard's objects.
func (s *ShardedListWatch) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	list, err := sendSharded(s, options, func(o metav1.ListOptions) (runtime.Object, error) {
		return s.lw.ListWithContext(ctx, o)
	})
	if err != nil {
		return nil, err
	}
	foreign, err := s.dropForeignItems(list)
	if err != nil {
		return nil, err
	}
	s.observeList(list, foreign)
	return list, nil
}

// Watch watches the shard's objects.
func (s *ShardedListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), options)
}

// WatchWithContext watches the shard's objects; events for other objects are dropped.
func (s *ShardedListWatch) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	w, err := sendSharded(s, options, func(o metav1.ListOptions) (watch.Interface, error) {
		return s.lw.WatchWithContext(ctx, o)
	})
	if err != nil {
		return nil, err
	}
	return newShardWatch(w, s), nil
}

// sendSharded sends a request with the shard selector, unless the server has refused it
// before; a refusal now is remembered and the request is sent again without it.
func sendSharded[T any](s *ShardedListWatch, options metav1.ListOptions, send func(metav1.ListOptions) (T, error)) (T, error) {
	s.mu.Lock()
	rejected := s.rejected
	s.mu.Unlock()
	if rejected {
		options.ShardSelector = ""
		return send(options)
	}
	options.ShardSelector = s.expr
	res, err := send(options)
	if err == nil || !rejectsShardSelector(err) {
		return res, err
	}
	s.mu.Lock()
	s.rejected = true
	s.setModeLocked(ShardModeClient, "the server rejected the shard selector: "+err.Error())
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

// dropForeignItems removes the items outside the shard from list and counts them.
func (s *ShardedListWatch) dropForeignItems(list runtime.Object) (int, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return 0, err
	}
	kept := items[:0:0]
	for _, item := range items {
		if s.Owns(item) {
			kept = append(kept, item)
		}
	}
	foreign := len(items) - len(kept)
	if foreign == 0 {
		return 0, nil
	}
	return foreign, meta.SetList(list, kept)
}

// observeList updates the mode from a LIST answer: foreign items prove the server ignored the
// selector; an echoed shardInfo proves it applied it.
func (s *ShardedListWatch) observeList(list runtime.Object, foreign int) {
	echoed := false
	if l, ok := list.(interface{ GetShardInfo() *metav1.ShardInfo }); ok {
		echoed = l.GetShardInfo() != nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.rejected:
	case foreign > 0:
		s.setModeLocked(ShardModeClient, "the server ignored the shard selector: objects outside the shard arrived")
	case echoed || s.mode == ShardModePending:
		s.setModeLocked(ShardModeServer, "the server applies the shard selector")
	}
}

// observeForeignEvent records a watch event for an object outside the shard.
func (s *ShardedListWatch) observeForeignEvent() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.rejected {
		s.setModeLocked(ShardModeClient, "the server ignored the shard selector: events for objects outside the shard arrived")
	}
}

// observeInitialEventsEnd records the end of a watch-list's initial state, which served as a
// LIST; foreign events among it were already recorded one by one.
func (s *ShardedListWatch) observeInitialEventsEnd() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode == ShardModePending {
		s.setModeLocked(ShardModeServer, "the server applies the shard selector")
	}
}

// setModeLocked logs each change of mode once.
func (s *ShardedListWatch) setModeLocked(m ShardMode, why string) {
	if s.mode == m {
		return
	}
	s.mode = m
	klog.Background().Info("Sharded ListerWatcher filtering mode", "mode", m, "reason", why, "shardSelector", s.expr)
}
