package cache

// informerFanout is the informer's own ResourceEventHandler: it turns
// changes applied to the cache into notifications for every handler. It
// always runs with blockDeltas held.
type informerFanout struct{ s *sharedIndexInformer }

// OnAdd, OnUpdate and OnDelete make informerFanout a ResourceEventHandler
// for a store that is not this package's: each is a batch of one, so that
// it takes notifyBatch's path (preheld objects boxed or read back, the
// mutation detector told, sync updates marked) like every other change.
func (f informerFanout) OnAdd(obj interface{}, isInInitialList bool) {
	f.notifyOne(notification{kind: addNotification, newObj: obj, initial: isInInitialList})
}

// OnUpdate is an update; one that did not change the resource version (a
// resync, or an unchanged object in a relist) only reaches handlers due
// for a resync.
func (f informerFanout) OnUpdate(oldObj, newObj interface{}) {
	f.notifyOne(notification{kind: updateNotification, oldObj: oldObj, newObj: newObj})
}

func (f informerFanout) OnDelete(obj interface{}) {
	f.notifyOne(notification{kind: deleteNotification, oldObj: obj})
}

func (f informerFanout) notifyOne(n notification) {
	ns := [1]notification{n}
	f.distributeChunk(ns[:])
}

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
// listeners to decode (adds) or read back (see heldBox). A chunk of them
// is staged in a buffer on the stack: listeners copy what they queue.
func (f informerFanout) distributeChunk(ns []notification) {
	var buf [preheldChunk]notification
	ns = stagePreheld(ns, buf[:0], f.boxAdds())
	var sync []bool
	for i := range ns {
		n := &ns[i]
		if n.kind == deleteNotification {
			continue
		}
		f.s.mutationDetector.AddObject(n.newObj)
		if n.kind == updateNotification && isSyncUpdate(n.oldObj, n.newObj) {
			if sync == nil {
				sync = make([]bool, len(ns))
			}
			sync[i] = true
		}
	}
	f.s.processor.distribute(ns, sync)
}

// boxAdds reports whether preheld adds may reach the listeners encoded:
// unless the mutation detector, which must see every object handed out,
// is on.
func (f informerFanout) boxAdds() bool {
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
