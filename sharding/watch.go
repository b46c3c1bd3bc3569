package sharding

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/openinformer/cache/internal/watchfilter"
)

// newShardWatch passes on the events of in that concern the shard's objects.
// requested is the shard the request asked for: an event outside it shows
// that the server does not filter, while one only outside a since narrowed
// shard does not.
func newShardWatch(in watch.Interface, shard *ListWatch, requested *shardFilter) watch.Interface {
	return watchfilter.New(in, func(ev watch.Event) bool { return keepShardEvent(ev, shard, requested) })
}

// keepShardEvent decides one event. Objects never change shard (a uid and a
// namespace are immutable), so an event for a foreign object, deletions
// included, never concerns this shard's store.
func keepShardEvent(ev watch.Event, shard *ListWatch, requested *shardFilter) bool {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		if shard.Owns(ev.Object) {
			return true
		}
		if !requested.owns(ev.Object) {
			shard.observeForeignEvent()
		}
		return false
	case watch.Bookmark:
		if m, ok := ev.Object.(metav1.Object); ok && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			shard.observeInitialEventsEnd()
		}
	}
	return true
}
