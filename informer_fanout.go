package cache

// informerFanout hands the changes applied to the cache to every handler
// (the deltaApplier's tell). It always runs with blockDeltas held.
type informerFanout struct{ s *sharedIndexInformer }

// notifyBatch distributes the changes of one batch of deltas, in order, a
// chunk at a time, so that no listener's lock is held for a whole relist.
func (f informerFanout) notifyBatch(ns []notification) {
	for len(ns) > 0 {
		chunk := ns[:chunkFor(ns)]
		f.distributeChunk(chunk)
		ns = ns[len(chunk):]
	}
}

// distributeChunk hands each listener the whole chunk at once, with the
// objects a compact informer's watch-list held encoded boxed for the
// listeners to decode (adds) or read back (see form.Box, held_box.go). A chunk of them
// is staged in a buffer on the stack: listeners copy what they queue.
func (f informerFanout) distributeChunk(ns []notification) {
	var buf [preheldChunk]notification
	detectorOff := f.detectorOff()
	ns = stagePreheld(ns, buf[:0], detectorOff)
	var sync []bool
	for i := range ns {
		n := &ns[i]
		if n.kind == deleteNotification {
			continue
		}
		if !detectorOff {
			f.s.mutationDetector.AddObject(n.newObj)
		}
		if n.kind == updateNotification && isSyncUpdate(n.oldObj, n.newObj) {
			if sync == nil {
				sync = make([]bool, len(ns))
			}
			sync[i] = true
		}
	}
	f.s.processor.distribute(ns, sync)
}

// detectorOff reports that the mutation detector (opt-in, by an
// environment variable) is off: it then needs no object, and preheld adds
// may reach the listeners encoded, since it is not there to see every
// object handed out.
func (f informerFanout) detectorOff() bool {
	_, off := f.s.mutationDetector.(noopMutationDetector)
	return off
}

// isSyncUpdate reports an update that did not change the resource version.
func isSyncUpdate(oldObj, newObj interface{}) bool {
	n, err := accessor(newObj)
	if err != nil {
		return false
	}
	o, err := accessor(oldObj)
	return err == nil && n.GetResourceVersion() == o.GetResourceVersion()
}
