package sharding

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// shardWatch passes on the events of a watch that concern the shard's objects. Its goroutine
// is owned by the watch: it ends when the wrapped watch closes or Stop is called.
type shardWatch struct {
	in    watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
	shard *ListWatch
	// requested is the shard the request asked for; an event outside it shows that the
	// server does not filter, while one only outside a since narrowed shard does not.
	requested *shardFilter
}

func newShardWatch(in watch.Interface, shard *ListWatch, requested *shardFilter) *shardWatch {
	w := &shardWatch{in: in, out: make(chan watch.Event), stop: make(chan struct{}), shard: shard, requested: requested}
	go w.run()
	return w
}

// ResultChan returns the shard's events; it is closed when the watch ends.
func (w *shardWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop ends the watch and the wrapped one; it may be called more than once.
func (w *shardWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *shardWatch) run() {
	defer close(w.out)
	in := w.in.ResultChan()
	for {
		select {
		case ev, ok := <-in:
			if !ok {
				return
			}
			if !w.keep(ev) {
				continue
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		case <-w.stop:
			return
		}
	}
}

// keep decides one event. Objects never change shard (a uid and a namespace are immutable),
// so an event for a foreign object, deletions included, never concerns this shard's store.
func (w *shardWatch) keep(ev watch.Event) bool {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		if w.shard.Owns(ev.Object) {
			return true
		}
		if !w.requested.owns(ev.Object) {
			w.shard.observeForeignEvent()
		}
		return false
	case watch.Bookmark:
		if m, ok := ev.Object.(metav1.Object); ok && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			w.shard.observeInitialEventsEnd()
		}
	}
	return true
}
