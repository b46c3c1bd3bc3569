package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/openinformer/cache/internal/objmeta"
	"github.com/openinformer/cache/internal/restartfsm"
	"github.com/openinformer/cache/internal/restartfsm/catchup"
	"github.com/openinformer/cache/internal/snapshot"
	"github.com/openinformer/cache/internal/store"
)

// restarter is an informer's warm restart (docs/RESTART.md): on its first
// ListAndWatch the reflector asks it for the initial list (warmStart), which
// it builds from the snapshot and the catch-up watch in a staged content
// seen by no one; while the informer runs and when it stops it saves the
// store (runPeriodic, save).
//
// Goroutines: warmStart runs on the reflector's, runPeriodic on one the
// informer's Run owns and waits for before its final save, so saves never
// overlap. mu guards lastRV only; it is never held across I/O.
//
// A stop (stop) that finds the snapshot on disk and the journal after it
// describing the final state syncs the journal instead of saving
// (docs/RESTART.md, "Stopping").
type restarter struct {
	opts      SnapshotOptions
	identity  snapshot.Header // without ResourceVersion, Encoding, Count
	store     *store.Snapshots
	lw        ListerWatcherWithContext
	transform TransformFunc
	clock     clock.Clock
	// reflector is the informer's, whose checks of a watch event's
	// object the catch-up's events pass too.
	reflector func() *Reflector

	// lock is held on the path from start to stop: one informer per path.
	lock *snapshot.Lock
	// saveErr is the text of the last failed save's error, logged once
	// until a save succeeds; touched by saves only, which never overlap.
	saveErr string

	mu sync.Mutex
	// lastRV is the version of the snapshot on disk, loaded or saved.
	lastRV string

	// blockDeltas is the informer's: held while a batch of deltas is
	// applied, it guards the journal's fields below, and a save holds it
	// to freeze the store and start the journal at the same point.
	blockDeltas sync.Locker
	journal     *snapshot.JournalWriter
	// journalOnDisk says the snapshot the journal follows is committed at
	// the path (loaded from it, or saved and the journal renamed beside
	// it): the two then describe the state of the last change journaled.
	journalOnDisk bool
	// snapshotBytes is the size of the snapshot on disk, loaded or saved.
	snapshotBytes int64
	// handOver is the version of a warm start's hand-over until its
	// Replace is applied: the journal holds that content already.
	handOver string
	// journalSet is the index generation the journal's header frames,
	// journalFramed its framed indexes' positions.
	journalSet    *store.IndexerSet
	journalFramed []int
	// Buffers reused from change to change.
	journalBuf, journalFrame []byte
	journalVals              [][]string
}

// warmStartFunc is a warm start: run once, by the reflector's first
// ListAndWatch.
type warmStartFunc func(context.Context) warmStartResult

// warmStartResult is what a warm start gives the reflector's first
// ListAndWatch: the initial list at rv when synced, else a fresh sync
// from a consistent read.
type warmStartResult struct {
	synced bool
	items  []any
	rv     string
}

// newRestarter returns s's restarter for options, holding the path's
// lock, or nil, logged once with the reason, when snapshots cannot be
// taken of this informer (another informer or process holds the path,
// say).
func newRestarter(logger klog.Logger, s *sharedIndexInformer, lw ListerWatcher, options SnapshotOptions) *restarter {
	r, err := buildRestarter(s, lw, options)
	if err == nil {
		err = r.claim(logger)
	}
	if err != nil {
		logger.Info("Warning: snapshots turned off", "path", options.Path, "err", err)
		return nil
	}
	return r
}

// claim takes the path's lock, then removes what saves that crashed left
// behind: no other informer saves there now.
func (r *restarter) claim(logger klog.Logger) error {
	lock, err := snapshot.TryLock(r.opts.Path)
	if err != nil {
		return err
	}
	r.lock = lock
	removed, err := snapshot.RemoveLeftovers(r.opts.Path, nextJournalPath(r.opts.Path))
	if len(removed) > 0 {
		logger.Info("Removed the files of interrupted snapshot saves", "path", r.opts.Path, "files", removed)
	}
	if err != nil {
		logger.Error(err, "Snapshot leftovers not removed", "path", r.opts.Path)
	}
	return nil
}

// unlock releases the path's lock, once the informer's last save is done.
func (r *restarter) unlock() {
	if r.lock != nil {
		_ = r.lock.Unlock()
		r.lock = nil
	}
}

func buildRestarter(s *sharedIndexInformer, lw ListerWatcher, options SnapshotOptions) (*restarter, error) {
	if options.Path == "" {
		return nil, errors.New("SnapshotOptions.Path is empty")
	}
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.AtomicFIFO) {
		return nil, errors.New("snapshots need the AtomicFIFO feature gate: without it a relist changes the store one object at a time")
	}
	identity, err := snapshotIdentity(s, s.lw, options)
	if err != nil {
		return nil, err
	}
	variant := ";v=" + options.Version
	if s.stripFields {
		variant = ";strip-managed-fields" + variant
	}
	st, err := store.NewSnapshots(s.indexer.storage, s.objectType, variant)
	if err != nil {
		return nil, err
	}
	r := &restarter{opts: withSnapshotDefaults(options), identity: identity, store: st,
		lw: ToListerWatcherWithContext(lw), transform: s.cacheTransform(), clock: s.clock,
		blockDeltas: &s.blockDeltas, reflector: s.reflector}
	return r, nil
}

// reflector returns the reflector of s's controller, nil before Run.
func (s *sharedIndexInformer) reflector() *Reflector {
	s.mu.Lock()
	ctrl := s.controller
	s.mu.Unlock()
	if ctrl == nil {
		return nil
	}
	ctrl.mu.RLock()
	defer ctrl.mu.RUnlock()
	return ctrl.reflector
}

func withSnapshotDefaults(o SnapshotOptions) SnapshotOptions {
	switch {
	case o.Interval == 0:
		o.Interval = DefaultSnapshotInterval
	case o.Interval > 0 && o.Interval < MinSnapshotInterval:
		o.Interval = MinSnapshotInterval
	}
	if o.Metrics == nil {
		o.Metrics = noSnapshotMetrics{}
	}
	switch {
	case o.CatchUpTimeout == 0:
		o.CatchUpTimeout = DefaultSnapshotCatchUpTimeout
	case o.CatchUpTimeout < 0:
		o.CatchUpTimeout = 0 // restartfsm: for ever
	}
	return o
}

// snapshotIdentity is the header fields a snapshot of s must match: the
// resource given or that of its example object, the scope given or
// remembered by lw, and the shard.
func snapshotIdentity(s *sharedIndexInformer, lw ListerWatcher, options SnapshotOptions) (snapshot.Header, error) {
	gvr := options.Resource
	if gvr.Empty() {
		var err error
		if gvr, err = snapshotResource(s.objectType); err != nil {
			return snapshot.Header{}, err
		}
	}
	scope := options.Scope
	if scope == nil {
		scope = listWatchScope(lw)
	}
	if scope == nil {
		return snapshot.Header{}, fmt.Errorf("no SnapshotOptions.Scope, and the ListerWatcher (%T) was not made by NewListWatchFromClient or NewFilteredListWatchFromClient", lw)
	}
	h := snapshot.Header{Resource: gvr.String(), Namespace: scope.Namespace,
		LabelSelector: canonicalLabels(scope.LabelSelector), FieldSelector: canonicalFields(scope.FieldSelector),
		Cluster: options.ClusterID}
	if sel := s.shardSelector; sel != nil && !sel.Empty() {
		h.Shard = sel.String()
	}
	return h, nil
}

// snapshotResource is the resource of example: its kind as set, else as
// the scheme knows its type, made plural the way kubectl guesses.
func snapshotResource(example runtime.Object) (schema.GroupVersionResource, error) {
	if example == nil {
		return schema.GroupVersionResource{}, errors.New("the informer has no example object")
	}
	gvk := example.GetObjectKind().GroupVersionKind()
	if _, isUnstructured := example.(*unstructured.Unstructured); gvk.Empty() && !isUnstructured {
		if kinds, _, err := scheme.Scheme.ObjectKinds(example); err == nil {
			gvk = kinds[0]
		}
	}
	if gvk.Kind == "" || gvk.Version == "" {
		return schema.GroupVersionResource{}, fmt.Errorf("the resource of the example object %T is unknown: set its apiVersion and kind", example)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	return gvr, nil
}

// canonicalLabels and canonicalFields print a selector as the parsed
// selector's String does, so that equal selectors compare equal.
func canonicalLabels(sel string) string {
	if parsed, err := labels.Parse(sel); err == nil {
		return parsed.String()
	}
	return sel
}

func canonicalFields(sel string) string {
	if parsed, err := fields.ParseSelector(sel); err == nil {
		return parsed.String()
	}
	return sel
}

// expected is the header a snapshot loaded now must match.
func (r *restarter) expected() *snapshot.Header {
	h := r.identity
	h.Encoding = r.store.Encoding(r.store.IndexerSet())
	return &h
}

// warmStart loads the snapshot into a staged content, catches it up with
// the server and returns it as the initial list; any other outcome is
// already logged and asks for a fresh sync.
func (r *restarter) warmStart(ctx context.Context) warmStartResult {
	staged := map[string]any{}
	logger := klog.FromContext(ctx)
	accepts := func(obj runtime.Object) bool { return true }
	if refl := r.reflector(); refl != nil {
		accepts = func(obj runtime.Object) bool { return refl.acceptsEventObject(ctx, obj) }
	}
	stopWaitLog := r.logWhileWaiting(logger)
	res := catchup.Run(ctx, catchup.Config{
		ListerWatcher: r.lw,
		Load:          func() (string, error) { return r.load(logger, staged) },
		Apply: func(ev watch.Event) {
			if accepts(ev.Object) {
				r.apply(logger, staged, ev)
			}
		},
		CheckProbe: r.checkProbe(staged, accepts),
		Machine:    restartfsm.Config{CatchUpTimeout: r.opts.CatchUpTimeout},
		Clock:      r.clock,
	})
	stopWaitLog()
	r.endCatchUp(logger, res.Synced, res.ResourceVersion)
	switch {
	case res.Synced:
		r.opts.Metrics.ObserveRestart(RestartSynced)
	case res.Reason != 0:
		r.opts.Metrics.ObserveRestart(res.Reason.String())
		return warmStartResult{}
	default: // stopped
		return warmStartResult{}
	}
	logger.V(2).Info("Warm restart synced from the snapshot", "path", r.opts.Path, "resourceVersion", res.ResourceVersion, "objects", len(staged))
	return warmStartResult{synced: true, items: store.HandOver(staged), rv: res.ResourceVersion}
}

// load reads the snapshot and its journal into staged.
func (r *restarter) load(logger klog.Logger, staged map[string]any) (string, error) {
	rd, err := snapshot.Open(r.opts.Path, r.expected())
	if err != nil {
		return "", err
	}
	defer rd.Close()
	rv, err := r.store.Read(rd, staged)
	if err == nil {
		r.mu.Lock()
		r.lastRV = rv
		r.mu.Unlock()
		r.noteSnapshotSize()
		rv, err = r.replayJournal(logger, rd.Header(), staged)
	}
	if err != nil {
		clear(staged)
		return "", err
	}
	return rv, nil
}

// noteSnapshotSize records the size of the snapshot on disk.
func (r *restarter) noteSnapshotSize() {
	var size int64
	if st, err := os.Stat(r.opts.Path); err == nil {
		size = st.Size()
	}
	r.blockDeltas.Lock()
	r.snapshotBytes = size
	r.blockDeltas.Unlock()
}

// apply applies one catch-up event to staged, through the informer's
// transform as the queue would, and journals it; an object it cannot keep
// is left out and reported, as a watch event's would be.
func (r *restarter) apply(logger klog.Logger, staged map[string]any, ev watch.Event) {
	key, err := informerKeyFunc(ev.Object)
	if err != nil {
		logger.Error(withoutObjects(err), "Catch-up event not applied")
		return
	}
	var rv string
	if m, err := objmeta.Accessor(ev.Object); err == nil {
		rv = m.GetResourceVersion()
	}
	if ev.Type != watch.Deleted {
		var obj any = ev.Object
		if r.transform != nil {
			obj, err = r.transform(obj)
		}
		if err == nil {
			err = r.store.Stage(staged, key, obj)
		}
		if err == nil {
			r.journalStaged(logger, rv, key, staged[key])
			return
		}
		logger.Error(withoutObjects(err), "Catch-up event not applied", "key", key)
	}
	delete(staged, key)
	r.journalStaged(logger, rv, key, nil)
}

// runPeriodic saves every Interval once synced, while the reflector
// watches, until ctx ends.
func (r *restarter) runPeriodic(ctx context.Context, synced <-chan struct{}, watching func() bool) {
	if r.opts.Interval < 0 {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-synced:
	}
	logger := klog.FromContext(ctx)
	for {
		t := r.clock.NewTimer(r.opts.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if watching() {
			r.save(logger)
		}
	}
}

// save writes the store's current state, unless its version is the one
// on disk already. A failure is logged; the previous snapshot stays.
func (r *restarter) save(logger klog.Logger) {
	start := r.clock.Now()
	r.mu.Lock()
	last := r.lastRV
	r.mu.Unlock()
	r.blockDeltas.Lock()
	f := r.store.Freeze()
	if f.RV() == "" || f.RV() == last {
		r.blockDeltas.Unlock()
		if f.RV() == "" {
			r.saveFailed(logger, errNoResourceVersion)
		}
		return
	}
	h := r.header(f, start)
	j := r.startJournalLocked(logger, h, f.Set())
	r.blockDeltas.Unlock()
	if err := r.write(h, f); err != nil {
		r.abandonJournal(j)
		r.saveFailed(logger, err)
		return
	}
	r.saveErr = ""
	var size int64
	if st, err := os.Stat(r.opts.Path); err == nil {
		size = st.Size()
	}
	r.commitJournal(logger, j, size)
	r.opts.Metrics.ObserveSnapshotSaved(r.clock.Since(start), size, f.Len(), start)
	r.mu.Lock()
	r.lastRV = f.RV()
	r.mu.Unlock()
	logger.V(4).Info("Snapshot saved", "path", r.opts.Path, "resourceVersion", f.RV(), "objects", f.Len())
}

// errNoResourceVersion is a cache whose last list or event carried no
// version to resume from: client-go's fake clientset lists with one but
// sends its objects, and so its watch events, without.
var errNoResourceVersion = errors.New("the cache's last list or watch event carried no resourceVersion to resume from (client-go's fake clientset's objects carry none; fake.Server's do)")

// saveFailed counts a save that failed with err and logs why, once until
// a save succeeds or fails for another reason: a cause that lasts (a full
// disk, an object that does not encode) is not logged at every interval.
func (r *restarter) saveFailed(logger klog.Logger, err error) {
	r.opts.Metrics.ObserveSnapshotFailed()
	err = withoutObjects(err)
	if err.Error() == r.saveErr {
		logger.V(4).Info("Snapshot not saved", "path", r.opts.Path, "err", err)
		return
	}
	r.saveErr = err.Error()
	logger.Error(err, "Snapshot not saved", "path", r.opts.Path)
}

// logWhileWaiting logs, when a restart has no catch-up timeout, every
// SnapshotCatchUpWaitLogInterval that it still waits, until the returned
// function is called: a catch-up that never ends says so.
func (r *restarter) logWhileWaiting(logger klog.Logger) (stop func()) {
	if r.opts.CatchUpTimeout != 0 {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		start := r.clock.Now()
		for {
			t := r.clock.NewTimer(SnapshotCatchUpWaitLogInterval)
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C():
				logger.Info("Warm restart still waiting to catch up, with no catch-up timeout", "path", r.opts.Path, "waited", r.clock.Since(start).Round(time.Second))
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// checkProbe returns the check of the warm start's probe (docs/RESTART.md,
// "Identity"): the first object listed, when no newer than the version
// loaded into staged, has not changed since, so staged must hold it as
// listed, same UID and resourceVersion; otherwise the snapshot is another
// cluster's, or of a history the server no longer has (a restore without
// a revision bump). An object accepts refuses, or whose versions do not
// compare, is not checked.
func (r *restarter) checkProbe(staged map[string]any, accepts func(runtime.Object) bool) func(runtime.Object, string) error {
	return func(list runtime.Object, loaded string) error {
		if l, err := meta.ListAccessor(list); err != nil || !notNewer(loaded, l.GetResourceVersion()) {
			return nil // rule R3 refuses a snapshot newer than the server
		}
		items, err := meta.ExtractList(list)
		if err != nil || len(items) == 0 || !accepts(items[0]) {
			return nil
		}
		m, err := meta.Accessor(items[0])
		if err != nil {
			return nil
		}
		rv := m.GetResourceVersion()
		if !notNewer(rv, loaded) {
			return nil
		}
		key, err := informerKeyFunc(items[0])
		if err != nil {
			return nil
		}
		held, ok := staged[key]
		if !ok {
			return fmt.Errorf("%w: the server has %q at resourceVersion %s, the snapshot at %s has no such object", errOtherHistory, key, rv, loaded)
		}
		uid, heldRV, err := r.store.IdentityOf(held)
		if err != nil {
			return nil
		}
		if (uid != "" && uid != m.GetUID()) || (heldRV != "" && heldRV != rv) {
			return fmt.Errorf("%w: the server has %q at resourceVersion %s (uid %s), the snapshot at %s has it at %s (uid %s)", errOtherHistory, key, rv, m.GetUID(), loaded, heldRV, uid)
		}
		return nil
	}
}

// notNewer reports whether resourceVersion a is comparable with b and not
// newer.
func notNewer(a, b string) bool {
	cmp, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && cmp <= 0
}

// errOtherHistory is a snapshot the probe's object contradicts.
var errOtherHistory = errors.New("snapshot of another cluster, or of a history the server no longer has")

// stop ends the informer's run, once its controller returned: when it
// synced, the final state is kept, by syncing the journal when the
// snapshot on disk and the journal describe it within the bound, else by
// a save; the journal then ends.
func (r *restarter) stop(logger klog.Logger, synced bool) {
	if synced && !r.syncJournalAtStop(logger) {
		r.save(logger)
	}
	r.blockDeltas.Lock()
	r.stopJournalLocked()
	r.blockDeltas.Unlock()
}

// header is the header of a snapshot of f frozen at, with the dictionary
// of its cold records, read after the freeze (store.Snapshots.Dictionary).
func (r *restarter) header(f store.Frozen, at time.Time) snapshot.Header {
	h := r.identity
	h.Encoding, h.Dictionary = r.store.Encoding(f.Set()), r.store.Dictionary()
	h.ResourceVersion, h.WrittenAt, h.Count = f.RV(), at, f.Len()
	return h
}

func (r *restarter) write(h snapshot.Header, f store.Frozen) error {
	w, err := snapshot.Create(r.opts.Path, h)
	if err != nil {
		return err
	}
	return r.store.Write(w, f)
}

// runSnapshots starts s's periodic snapshots, if on, and returns what Run
// calls once the controller has returned: it waits for the periodic saver
// to exit, then keeps the final state (stop), after the reflector stopped
// (the content and its version are final) and before Run returns.
func (s *sharedIndexInformer) runSnapshots(ctx context.Context, c *controller) (stopped func()) {
	s.mu.Lock()
	r := s.restart
	s.mu.Unlock()
	if r == nil {
		return func() {}
	}
	synced := s.processor.Synced()
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.runPeriodic(ctx, synced, c.watching)
	}()
	return func() {
		<-done
		r.stop(klog.FromContext(ctx), s.HasSynced())
		r.unlock()
	}
}
