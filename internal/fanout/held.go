package fanout

import (
	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/store"
)

// Handlers decode their own initial list.
//
// A compact informer's initial list (a watch-list's objects held as they
// arrived, or a warm restart's snapshot) reaches the fan-out still encoded,
// as preheld values. Decoding them there, on the informer's processLoop,
// made the informer's own HasSynced, which only needs the store populated,
// wait for every decode the handlers need (docs/RESTART.md, "Measured").
// So the fan-out hands each listener a form.Box instead of the object, and
// the listener decodes it just before it calls its handler. The box decodes
// once, for the first listener to reach it; every listener gets the same
// object, which lives as long as some listener still holds the box.
//
// Only adds are boxed: an update's objects are read on the processLoop (a
// sync update is told apart by their resource versions), and so is every
// object when the mutation detector, which records what handlers are
// handed, is on.
//
// Goroutines and locks: a box is decoded only on a listener's goroutine,
// in deliver, with no lock of the informer or the listener held (a
// collapsed backlog keys a box by its store key, undecoded). Its once is
// then held across the form's view, which takes only the hot cache's
// shard lock: a listener waiting on another's decode of the same box
// waits for nothing that can wait on it. A decoded object goes into the
// hot cache only if the key has no entry there (form.Compact's View), and an
// entry is valid for its bytes alone, so a box decoded after its key was
// updated or deleted can never be read as the key's current object: as
// with any reader's late view, at most a deleted object stays there until
// it is evicted.

// readBack replaces a boxed object of n by the object, reporting false
// when it cannot be read back: the handler is then not called.
func (n *Notification) readBack() bool {
	b, ok := n.New.(*form.Box)
	if !ok {
		return true
	}
	n.New, ok = b.Object()
	return ok
}

// stagePreheld returns ns, with every preheld object either boxed (an add,
// when boxAdds) or read back, in out (grown if need be) when there is
// one: ns's own array, the whole batch's, is left alone, so that nothing a
// listener decodes lives as long as it. The boxes of a chunk share one
// allocation, which stays until every listener has delivered the chunk's
// last box: a lone or leading listener keeps at most a chunk of decoded
// objects beyond its queue, and a listener behind the others keeps alive
// what they decoded for it, as its queue of decoded objects did before
// boxes. A change whose object cannot be read back here is left out,
// reported by the form's view.
func stagePreheld(ns, out []Notification, boxAdds bool) []Notification {
	first, adds := -1, 0
	for i := range ns {
		if _, ok := ns[i].New.(store.Preheld); ok {
			if first < 0 {
				first = i
			}
			if ns[i].Kind == Add {
				adds++
			}
		}
	}
	if first < 0 {
		return ns
	}
	var slab []form.Box
	if boxAdds {
		slab = make([]form.Box, adds)
	}
	out = append(out[:0], ns[:first]...)
	for _, n := range ns[first:] {
		p, ok := n.New.(store.Preheld)
		switch {
		case !ok:
		case len(slab) > 0 && n.Kind == Add:
			b := &slab[0]
			slab = slab[1:]
			p.BoxInto(b)
			n.New = b
		default:
			if n.New, ok = p.View(true); !ok {
				continue
			}
		}
		out = append(out, n)
	}
	return out
}

// Boxes returns a box of every object of f, held in fm, for a handler
// added to a running compact informer: its initial list then costs the
// store's frozen state and a box per object, and each object is read back
// on the listener's goroutine as it is delivered, as a watch-list's adds
// are. Reading the whole store back on the adding goroutine instead kept
// every object decoded at once until the listener had delivered them all
// (docs/CONTROLLER-RUNTIME.md, "Peak heap"). The boxes come in slabs of
// preheldChunk, so that a delivered slab's objects can go.
func Boxes(f store.Frozen, fm form.Form) []any {
	out := make([]any, 0, f.Len())
	var slab []form.Box
	f.RangeHeld(func(key string, held any) bool {
		if len(slab) == 0 {
			slab = make([]form.Box, min(preheldChunk, f.Len()-len(out)))
		}
		b := &slab[0]
		slab = slab[1:]
		b.Fill(key, held, fm)
		out = append(out, b)
		return true
	})
	return out
}

// preheldChunk is notificationChunk for notifications whose objects a
// compact informer's watch-list held encoded: each chunk's objects are
// decoded together and live until its listeners are done with them, so a
// chunk of 1024 small custom resources (about 10 KB each decoded) kept
// 11.5 MB alive beside a 26 MB compact store at the height of the sync
// (docs/MEMORY.md, "Initial sync peak"). 64 bounds that at about 0.7 MB
// for them and 1.5 MB for pods, while a chunk still amortises the
// listeners' locks over many notifications.
const preheldChunk = 64

// chunkFor is how many of ns to hand out at once.
func chunkFor(ns []Notification) int {
	if _, ok := ns[0].New.(store.Preheld); ok {
		return min(len(ns), preheldChunk)
	}
	return min(len(ns), notificationChunk)
}

// boxedKey is the store key of a boxed object, false for any other object.
func boxedKey(obj any) (string, bool) {
	if b, ok := obj.(*form.Box); ok {
		return b.Key(), true
	}
	return "", false
}
