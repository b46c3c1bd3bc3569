package cache

// A store whose form encodes objects (compact storage) can take the objects
// of a watch-list stream in its held form as they arrive, so that the
// decoded initial list never lives whole: the stream's buffer keeps each
// object encoded, with its index values, the queue's ReplacedAll carries
// those entries, the store adopts them without encoding or decoding again,
// and the informer's fan-out decodes each one (or takes it from the hot
// cache) only as it hands it to the handlers, a chunk at a time. Stores
// that hold objects as they are never take this path: there is nothing to
// gain.

// preheld is an object already in its store's held form, with its store
// key: what a compact informer's watch-list buffer keeps of each object.
type preheld struct {
	key  string
	held any
	// form reads the object back; it is the store's.
	form storedForm
	// index is the object's index values, computed while it was decoded
	// in hand, so that the store's Replace indexes it without decoding it
	// again.
	index heldIndex
}

// preholdFunc returns obj, already transformed, as a preheld, or the
// error that refuses it alone.
type preholdFunc func(obj any) (preheld, error)

// preholdingStore is a store that can hold objects ahead of a Replace:
// this package's. Its preholder is nil when it holds objects as they are.
type preholdingStore interface {
	preholder() preholdFunc
}

var _ preholdingStore = &cache{}

// preholder returns the store's preholdFunc, nil when its form holds
// objects in place: there is nothing to gain.
func (c *cache) preholder() preholdFunc {
	if c.storage.form.inPlace() {
		return nil
	}
	return func(obj any) (preheld, error) {
		key, err := c.keyOf(obj)
		if err != nil {
			return preheld{}, err
		}
		held, err := c.storage.hold(key, obj)
		if err != nil {
			return preheld{}, err
		}
		index := c.storage.indexers.Load().heldValues(key, obj)
		return preheld{key: key, held: held, form: c.storage.form, index: index}, nil
	}
}

// view reads p back, into the form's cache of decoded objects if keep.
func (p preheld) view(keep bool) (any, bool) {
	return viewHeld(p.form, p.key, p.held, keep)
}

// resolvePreheld returns ns with every preheld object read back, in a new
// slice when there is one, so that the decoded objects live only as long
// as the chunk they are handed out in and not as long as the caller's
// slice (a whole relist). A change whose object cannot be read back is left
// out, reported by the form's view.
func resolvePreheld(ns []notification) []notification {
	first := -1
	for i := range ns {
		if _, ok := ns[i].newObj.(preheld); ok {
			first = i
			break
		}
	}
	if first < 0 {
		return ns
	}
	out := make([]notification, first, len(ns))
	copy(out, ns[:first])
	for _, n := range ns[first:] {
		if p, ok := n.newObj.(preheld); ok {
			obj, ok := p.view(true)
			if !ok {
				continue
			}
			n.newObj = obj
		}
		out = append(out, n)
	}
	return out
}
