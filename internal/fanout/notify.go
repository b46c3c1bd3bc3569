package fanout

import "github.com/openinformer/cache/internal/objmeta"

// Notify distributes the changes of one batch of deltas, in order, a
// chunk at a time, so that no listener's lock is held for a whole relist.
// The informer calls it with its blockDeltas lock held.
func (p *Processor) Notify(ns []Notification) {
	for len(ns) > 0 {
		chunk := ns[:chunkFor(ns)]
		p.distributeChunk(chunk)
		ns = ns[len(chunk):]
	}
}

// distributeChunk hands each listener the whole chunk at once, with the
// objects a compact informer's watch-list held encoded boxed for the
// listeners to decode (adds) or read back (see form.Box, held.go). A chunk
// of them is staged in a buffer on the stack: listeners copy what they
// queue. Without a mutation detector, which must see every object handed
// out, preheld adds reach the listeners boxed.
func (p *Processor) distributeChunk(ns []Notification) {
	var buf [preheldChunk]Notification
	detector := p.cfg.Detector
	ns = stagePreheld(ns, buf[:0], detector == nil)
	var sync []bool
	for i := range ns {
		n := &ns[i]
		if n.Kind == Delete {
			continue
		}
		if detector != nil {
			detector.AddObject(n.New)
		}
		if n.Kind == Update && isSyncUpdate(n.Old, n.New) {
			if sync == nil {
				sync = make([]bool, len(ns))
			}
			sync[i] = true
		}
	}
	p.distribute(ns, sync)
}

// isSyncUpdate reports an update that did not change the resource version.
func isSyncUpdate(oldObj, newObj any) bool {
	n, err := objmeta.Accessor(newObj)
	if err != nil {
		return false
	}
	o, err := objmeta.Accessor(oldObj)
	return err == nil && n.GetResourceVersion() == o.GetResourceVersion()
}
