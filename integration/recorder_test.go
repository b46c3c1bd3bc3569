package integration

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientcache "k8s.io/client-go/tools/cache"
)

type eventOp string

const (
	opAdd    eventOp = "add"
	opUpdate eventOp = "update"
	opDelete eventOp = "delete"
)

// widgetEvent is one notification as a handler saw it.
type widgetEvent struct {
	op        eventOp
	rv        uint64
	oldRV     uint64 // updates: the old object's version
	tombstone bool   // deletes: delivered as DeletedFinalStateUnknown
	at        time.Time
}

// eventRecorder is a ResourceEventHandler that keeps every key's history.
type eventRecorder struct {
	mu       sync.Mutex
	byKey    map[string][]widgetEvent
	problems []string
}

func newEventRecorder() *eventRecorder {
	return &eventRecorder{byKey: map[string][]widgetEvent{}}
}

func (r *eventRecorder) record(obj any, e widgetEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		r.problems = append(r.problems, fmt.Sprintf("%s with %T", e.op, obj))
		return
	}
	e.rv = parseRV(u)
	e.at = time.Now()
	key := widgetKey(u)
	r.byKey[key] = append(r.byKey[key], e)
}

func (r *eventRecorder) OnAdd(obj any, _ bool) { r.record(obj, widgetEvent{op: opAdd}) }

func (r *eventRecorder) OnUpdate(oldObj, newObj any) {
	var oldRV uint64
	if u, ok := oldObj.(*unstructured.Unstructured); ok {
		oldRV = parseRV(u)
	}
	r.record(newObj, widgetEvent{op: opUpdate, oldRV: oldRV})
}

func (r *eventRecorder) OnDelete(obj any) {
	if d, ok := obj.(clientcache.DeletedFinalStateUnknown); ok {
		r.record(d.Obj, widgetEvent{op: opDelete, tombstone: true})
		return
	}
	r.record(obj, widgetEvent{op: opDelete})
}

// finalStateDiff reports keys whose last event does not match want: live
// keys must end in an add or update at want's version, others in a delete.
func (r *eventRecorder) finalStateDiff(want widgetState) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for key, rv := range want {
		events := r.byKey[key]
		if len(events) == 0 {
			out = append(out, "no event for "+key)
			continue
		}
		last := events[len(events)-1]
		if last.op == opDelete || last.rv != rv {
			out = append(out, fmt.Sprintf("%s ends in %s@%d, want %d", key, last.op, last.rv, rv))
		}
	}
	for key, events := range r.byKey {
		if _, live := want[key]; !live && events[len(events)-1].op != opDelete {
			out = append(out, key+" was deleted but its last event is not a delete")
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("... %d in all", len(out)))
	}
	return strings.Join(out, "; ")
}

// orderProblems checks every key's history: versions never go back, each
// update's old object is the state the handler saw last, a key is never
// added twice without a delete in between, and deletes carry the last
// state seen (tombstones) or a newer one.
func (r *eventRecorder) orderProblems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	problems := slices.Clone(r.problems)
	for key, events := range r.byKey {
		if p := historyProblem(events); p != "" {
			problems = append(problems, key+": "+p)
		}
	}
	sort.Strings(problems)
	return problems
}

func historyProblem(events []widgetEvent) string {
	live := false
	var last uint64
	for i, e := range events {
		switch {
		case e.op == opAdd && live:
			return fmt.Sprintf("event %d: add of a key already present", i)
		case e.op != opAdd && !live:
			return fmt.Sprintf("event %d: %s of an absent key", i, e.op)
		case e.op == opUpdate && e.oldRV != last:
			return fmt.Sprintf("event %d: update from %d, handler last saw %d", i, e.oldRV, last)
		case e.tombstone && e.rv != last:
			return fmt.Sprintf("event %d: tombstone at %d, handler last saw %d", i, e.rv, last)
		case e.rv < last:
			return fmt.Sprintf("event %d: %s went back from %d to %d", i, e.op, last, e.rv)
		}
		live = e.op != opDelete
		last = e.rv
	}
	return ""
}

// seenVersions returns the versions of every add and update for key.
func (r *eventRecorder) seenVersions(key string) []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var rvs []uint64
	for _, e := range r.byKey[key] {
		if e.op != opDelete {
			rvs = append(rvs, e.rv)
		}
	}
	return rvs
}

// tombstones counts deletes delivered as DeletedFinalStateUnknown.
func (r *eventRecorder) tombstones() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, events := range r.byKey {
		for _, e := range events {
			if e.tombstone {
				n++
			}
		}
	}
	return n
}

// keys counts the keys the handler has heard of.
func (r *eventRecorder) keys() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byKey)
}

// latencies returns, for every written version the handler saw, the time
// from sending the write to the handler's notification, sorted.
func (r *eventRecorder) latencies(log *writeLog) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for key, events := range r.byKey {
		for _, e := range events {
			if sent, ok := log.sent[writtenVersion{key, e.rv}]; ok && e.op != opDelete {
				out = append(out, e.at.Sub(sent))
			}
		}
	}
	slices.Sort(out)
	return out
}
