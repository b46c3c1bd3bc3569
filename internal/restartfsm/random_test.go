package restartfsm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/restartfsm"
	"github.com/openinformer/cache/internal/restartfsm/catchup"
	"github.com/openinformer/cache/internal/snapshot"
)

// restarts is how many restarts TestRandomRestarts makes.
const restarts = 1000

// catchUpTimeout is the drivers' CatchUpTimeout.
const catchUpTimeout = 90 * time.Second

// scope is the identity every snapshot of the test is written with.
var scope = snapshot.Header{Resource: "/v1, Resource=pods", Encoding: "protobuf"}

// TestRandomRestarts restarts a controller 1,000 times against one fake
// server. While it is down the server gets creates, updates and deletes, or
// nothing but other resources' writes (a quiet resource), and sometimes a
// compaction, a restart of its own, request faults, a corrupted, foreign or
// too new snapshot. Each restart runs the machine to its end, performing its
// actions against the server, in half of them with more writes arriving
// during the catch-up. After each, what the handlers would be given (the cache handed
// over) must equal a fresh sync's at the same resourceVersion, a warm
// restart must have made no full LIST or initial-state watch, and the
// outcome must be the one the injected faults call for: 0 divergences.
//
// This drives catchup.Run and the file format with a staged cache of its
// own; the informer's wiring (docs/RESTART.md, "What the store side
// needs") comes later.
func TestRandomRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDriver(t, 29)
		outcomes, passed := map[string]int{}, map[string]int{}
		for i := range restarts {
			got, want := d.round()
			if !assert.Equal(t, want, got.outcome(), "restart %d: outcome", i) {
				continue
			}
			outcomes[want]++
			passed[got.passedBy]++
		}
		t.Logf("outcomes of %d restarts: %v; synced by %v; journal %v", restarts, outcomes, passed, d.journalStats)
		for _, by := range []string{"event", "bookmark", "open"} {
			assert.Positive(t, passed[by], "no restart synced by %s", by)
		}
		for _, what := range []string{"replayed", "torn", "rescued"} {
			assert.Positive(t, d.journalStats[what], "no restart's journal was %s", what)
		}
		for _, want := range []string{"synced", "fallback: snapshot unusable", "fallback: snapshot newer than the server",
			"fallback: snapshot older than the server's watch window", "fallback: catch-up failed"} {
			assert.Positive(t, outcomes[want], "no restart ended %q", want)
		}
	})
}

// driver plays the controller: it performs the machine's actions with the
// fake server and a snapshot file, and checks each restart's result.
type driver struct {
	t   *testing.T
	rnd *rand.Rand
	srv *fake.Server
	// file is the snapshot "on disk", nil for none. It is kept in memory:
	// the file's atomic write is internal/snapshot's to test, and a
	// thousand fsyncs would make this test slow.
	file []byte
	// header is file's header.
	header snapshot.Header
	// journal follows file: the changes the running informer applied after
	// the snapshot, as a JournalWriter wrote them (nil for none), and where
	// each frame ends, with its version.
	journal []byte
	frames  []frameEnd
	names   int
	// floor is the server's resourceVersion at its last compaction or
	// restart: a snapshot older than it is out of the window.
	floor uint64
	// spoiled says how the file was damaged since it was last written, as
	// the outcome it calls for ("" for intact).
	spoiled string
	// journalStats counts restarts that replayed a journal, found it torn,
	// and were rescued by it: warm, from a snapshot alone out of the window.
	journalStats map[string]int
	// faults are what round injected for the coming restart.
	faults faults
	// loadedRV is the version of the snapshot the last restart loaded.
	loadedRV string
}

// tooNew is the outcome of a snapshot newer than the server.
const tooNew = "fallback: snapshot newer than the server"

// frameEnd is where a journal frame ends and the version it records.
type frameEnd struct {
	offset int
	rv     uint64
}

// faults are one restart's injected troubles besides the file's.
type faults struct {
	foreign, watchInternal, closeMidway bool
}

func newDriver(t *testing.T, seed uint64) *driver {
	d := &driver{t: t, rnd: rand.New(rand.NewPCG(seed, seed)), srv: fake.MustNew(fake.Options{Object: &corev1.Pod{}, HistorySize: 1 << 20}),
		journalStats: map[string]int{}}
	for range 20 {
		d.create(d.rnd)
	}
	return d
}

// round makes one restart after a downtime and returns its result and the
// outcome the injected faults call for.
func (d *driver) round() (result, string) {
	resumeRV := d.resumeRV()
	d.downtime()
	d.faults = d.injectFaults()
	want := d.expected(resumeRV)
	d.srv.ResetRequests()
	var writes sync.WaitGroup
	if d.rnd.IntN(2) == 0 { // else the resource stays quiet during the catch-up too
		writer := rand.New(rand.NewPCG(d.rnd.Uint64(), 0))
		writes.Go(func() { d.writeDuringCatchUp(writer) })
	}
	r := d.restart()
	writes.Wait()
	d.check(r, resumeRV)
	d.countJournal(r, resumeRV)
	// Else a crash: the next restart finds this snapshot again. Not a too
	// new one, whose version the server could pass meanwhile: resuming from
	// it would skip changes, the hazard of an etcd restore without
	// --bump-revision that docs/RESTART.md assumes away.
	if d.rnd.IntN(5) > 0 || d.spoiled == tooNew {
		d.save(r)
		if d.rnd.IntN(2) == 0 {
			d.runAndJournal(r.rv)
		}
	}
	return r, want
}

// countJournal adds a restart to journalStats.
func (d *driver) countJournal(r result, resumeRV uint64) {
	if len(d.frames) == 0 || d.spoiled != "" {
		return
	}
	snapshotRV, err := strconv.ParseUint(d.header.ResourceVersion, 10, 64)
	require.NoError(d.t, err)
	if resumeRV > snapshotRV {
		d.journalStats["replayed"]++
	}
	if d.frames[len(d.frames)-1].offset > len(d.journal) {
		d.journalStats["torn"]++
	}
	if r.synced && snapshotRV < d.floor {
		d.journalStats["rescued"]++
	}
}

// resumeRV is the version a restart resumes from: the last complete frame's
// of the journal, else the snapshot's; 0 for no snapshot.
func (d *driver) resumeRV() uint64 {
	for i := len(d.frames) - 1; i >= 0; i-- {
		if d.frames[i].offset <= len(d.journal) {
			return d.frames[i].rv
		}
	}
	r, err := d.open(nil)
	if err != nil {
		return 0
	}
	rv, _ := strconv.ParseUint(r.Header().ResourceVersion, 10, 64)
	return rv
}

// runAndJournal plays the informer running after a restart synced at rv:
// more writes arrive, it applies every change since rv and journals it,
// then it crashes, sometimes in the middle of a frame.
func (d *driver) runAndJournal(rv string) {
	for range d.rnd.IntN(8) {
		d.write(d.rnd)
	}
	if d.rnd.IntN(3) == 0 {
		d.srv.AdvanceResourceVersion(1 + uint64(d.rnd.IntN(3)))
	}
	current := d.srv.ResourceVersion()
	if current == rv {
		return
	}
	var buf bytes.Buffer
	j, err := snapshot.NewJournalWriter(&buf, d.header)
	require.NoError(d.t, err)
	w := d.watchRetrying(rv)
	defer w.Stop()
	last := rv
	for last != current {
		select {
		case ev := <-w.ResultChan():
			p := ev.Object.(*corev1.Pod)
			last = p.ResourceVersion
			key := p.Namespace + "/" + p.Name
			if ev.Type == watch.Deleted {
				require.NoError(d.t, j.Delete(last, key))
			} else {
				require.NoError(d.t, j.Put(last, key, encode(d.t, p)))
			}
		case <-time.After(time.Second): // no event: the rest is other resources' writes
			last = current
			require.NoError(d.t, j.Progress(last))
		}
		require.NoError(d.t, j.Flush())
		n, err := strconv.ParseUint(last, 10, 64)
		require.NoError(d.t, err)
		d.frames = append(d.frames, frameEnd{offset: buf.Len(), rv: n})
	}
	d.journal = buf.Bytes()
	if d.rnd.IntN(10) == 0 { // the crash tore the last frame
		d.journal = d.journal[:len(d.journal)-1-d.rnd.IntN(3)]
	}
}

// watchRetrying watches from rv, through the request faults left queued.
func (d *driver) watchRetrying(rv string) watch.Interface {
	for {
		w, err := d.srv.Watch(metav1.ListOptions{ResourceVersion: rv})
		if err == nil {
			return w
		}
		time.Sleep(time.Second)
	}
}

// downtime changes the server while the controller is down.
func (d *driver) downtime() {
	switch d.rnd.IntN(10) {
	case 0: // nothing at all: the snapshot is as new as the server
	case 1, 2: // a quiet resource: only other resources' writes
		d.srv.AdvanceResourceVersion(1 + uint64(d.rnd.IntN(5)))
	default:
		for range d.rnd.IntN(20) {
			d.write(d.rnd)
		}
	}
	switch d.rnd.IntN(20) {
	case 0:
		d.srv.Compact()
		d.floor = d.rv()
	case 1:
		d.srv.Restart(1000)
		d.floor = d.rv()
	}
}

// injectFaults queues request faults and, when there is a snapshot,
// sometimes spoils it.
func (d *driver) injectFaults() faults {
	if d.rnd.IntN(5) == 0 {
		d.srv.FailNextLists(1+d.rnd.IntN(2), fake.TooManyRequests(1))
	}
	if d.rnd.IntN(5) == 0 {
		d.srv.FailNextWatches(1, fake.ConnectionRefused())
	}
	f := faults{closeMidway: d.rnd.IntN(5) == 0}
	if d.file == nil || d.spoiled != "" {
		return f
	}
	switch d.rnd.IntN(40) {
	case 0:
		d.damage()
		d.spoiled = "fallback: snapshot unusable"
	case 1:
		d.inflate()
		d.spoiled = tooNew
	case 2:
		f.foreign = true
	case 3:
		// Queued after any other watch fault: the first watch that gets
		// through fails with it.
		f.watchInternal = true
		d.srv.FailNextWatches(1, fake.InternalError("etcd is sad"))
	}
	return f
}

// expected is the outcome the faults call for, by the order in which the
// machine meets them.
func (d *driver) expected(snapshotRV uint64) string {
	f := d.faults
	switch {
	case d.file == nil:
		return "fallback: no snapshot"
	case d.spoiled != "":
		return d.spoiled
	case f.foreign:
		return "fallback: snapshot unusable"
	case f.watchInternal:
		return "fallback: catch-up failed"
	case snapshotRV < d.floor:
		return "fallback: snapshot older than the server's watch window"
	}
	return "synced"
}

// writeDuringCatchUp keeps events flowing while the controller restarts,
// with its own random source: it runs beside the driver.
func (d *driver) writeDuringCatchUp(rnd *rand.Rand) {
	for range 3 {
		time.Sleep(time.Duration(100+rnd.IntN(400)) * time.Millisecond)
		d.write(rnd)
	}
}

// write creates, updates or deletes a pod, keeping between 5 and 40.
func (d *driver) write(rnd *rand.Rand) {
	objs := d.srv.Objects()
	switch op := rnd.IntN(3); {
	case len(objs) < 5 || (op == 0 && len(objs) <= 40):
		d.create(rnd)
	case op == 2 || len(objs) > 40:
		p := objs[rnd.IntN(len(objs))].(*corev1.Pod)
		_, err := d.srv.Delete(p.Namespace, p.Name)
		require.NoError(d.t, err)
	default:
		p := objs[rnd.IntN(len(objs))].(*corev1.Pod)
		p.Labels = map[string]string{"v": strconv.Itoa(rnd.IntN(1000))}
		_, err := d.srv.Update(p)
		require.NoError(d.t, err)
	}
}

func (d *driver) create(rnd *rand.Rand) {
	d.names++
	name := fmt.Sprintf("pod-%d", d.names)
	_, err := d.srv.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-" + strconv.Itoa(rnd.IntN(3)), Name: name}})
	require.NoError(d.t, err)
}

func (d *driver) rv() uint64 {
	rv, err := strconv.ParseUint(d.srv.ResourceVersion(), 10, 64)
	require.NoError(d.t, err)
	return rv
}

// result is how a restart ended: synced at rv with cache handed over, or
// fallen back and synced from scratch.
type result struct {
	synced bool
	reason restartfsm.Reason
	rv     string
	cache  map[string]*corev1.Pod
	// passedBy says what proved a synced restart caught up: an "event" or a
	// "bookmark" at or past the target, or the watch's "open" when the
	// snapshot was as new as the target.
	passedBy string
}

func (r result) outcome() string {
	if r.synced {
		return "synced"
	}
	return "fallback: " + r.reason.String()
}

// restart runs catchup.Run, the machine's I/O edge, to its end, with a
// staged cache of its own; a fallback then syncs from scratch.
func (d *driver) restart() result {
	staged := map[string]*corev1.Pod{}
	lw := &faultyWatches{Server: d.srv, closeMidway: d.faults.closeMidway, rnd: d.rnd}
	var last watch.Event
	res := catchup.Run(context.Background(), catchup.Config{
		ListerWatcher: lw,
		Load:          func() (string, error) { return d.load(staged) },
		Apply: func(ev watch.Event) {
			last = ev
			p := ev.Object.(*corev1.Pod)
			if ev.Type == watch.Deleted {
				delete(staged, p.Namespace+"/"+p.Name)
				return
			}
			staged[p.Namespace+"/"+p.Name] = p
		},
		Machine: restartfsm.Config{CatchUpTimeout: catchUpTimeout},
	})
	if !res.Synced {
		rv, cache := d.freshSync()
		return result{reason: res.Reason, rv: rv, cache: cache}
	}
	by := "bookmark"
	switch {
	case res.ResourceVersion == d.loadedRV:
		by = "open"
	case last.Object != nil && last.Object.(*corev1.Pod).ResourceVersion == res.ResourceVersion:
		by = "event"
	}
	return result{synced: true, rv: res.ResourceVersion, cache: staged, passedBy: by}
}

// faultyWatches is the server, whose first watch of a restart may be closed
// after a few events: the machine must resume it.
type faultyWatches struct {
	*fake.Server
	closeMidway bool
	rnd         *rand.Rand
	watches     int
}

func (f *faultyWatches) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := f.Server.WatchWithContext(ctx, o)
	f.watches++
	if err == nil && f.closeMidway && f.watches == 1 {
		f.Server.CloseWatchesAfter(1 + f.rnd.IntN(3))
	}
	return w, err
}

// load reads the snapshot into staged.
func (d *driver) load(staged map[string]*corev1.Pod) (string, error) {
	if d.file == nil {
		return "", &snapshot.Error{Reason: snapshot.MissingReason}
	}
	expect := scope
	if d.faults.foreign {
		expect.LabelSelector = "app=other"
	}
	r, err := d.open(&expect)
	if err != nil {
		return "", err
	}
	for {
		key, value, err := r.Next()
		if err == io.EOF {
			h := r.Header()
			d.loadedRV, err = d.replay(&h, staged)
			return d.loadedRV, err
		}
		if err != nil {
			return "", err
		}
		// A record is only trustworthy once the checksum matched: one that
		// does not decode is the file's fault, not the test's.
		p := &corev1.Pod{}
		if err := p.Unmarshal(value); err != nil {
			return "", err
		}
		staged[string(key)] = p
	}
}

// replay applies the journal that follows the loaded snapshot h to staged,
// up to its last complete frame, and returns the version reached.
func (d *driver) replay(h *snapshot.Header, staged map[string]*corev1.Pod) (string, error) {
	if d.journal == nil {
		return h.ResourceVersion, nil
	}
	j, err := snapshot.NewJournalReader(bytes.NewReader(d.journal), int64(len(d.journal)), h)
	require.NoError(d.t, err, "the journal follows the snapshot it was started with")
	rv := h.ResourceVersion
	for {
		c, err := j.Next()
		if err == io.EOF {
			return rv, nil
		}
		require.NoError(d.t, err)
		rv = c.ResourceVersion
		switch c.Op {
		case snapshot.Put:
			p := &corev1.Pod{}
			if err := p.Unmarshal(c.Value); err != nil {
				return "", err
			}
			staged[string(c.Key)] = p
		case snapshot.Delete:
			delete(staged, string(c.Key))
		}
	}
}

// freshSync lists from a consistent read, retrying faults, as a fallback's
// informer does.
func (d *driver) freshSync() (string, map[string]*corev1.Pod) {
	for {
		obj, err := d.srv.List(metav1.ListOptions{})
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		list := obj.(*corev1.PodList)
		return list.ResourceVersion, podMap(list)
	}
}

func podMap(list *corev1.PodList) map[string]*corev1.Pod {
	m := make(map[string]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		p := &list.Items[i]
		m[p.Namespace+"/"+p.Name] = p
	}
	return m
}

// check compares the cache handed over with a fresh sync's at its version,
// and a warm restart's requests with "no full sync".
func (d *driver) check(r result, snapshotRV uint64) {
	t := d.t
	rv, err := strconv.ParseUint(r.rv, 10, 64)
	require.NoError(t, err)
	if r.synced {
		require.GreaterOrEqual(t, rv, snapshotRV, "the cache went back in time")
		c := d.srv.RequestCounts()
		require.Zero(t, c.FullSyncs(), "a warm restart made a full sync: %+v", c)
	}
	obj, err := d.srv.List(metav1.ListOptions{ResourceVersion: r.rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	require.NoError(t, err)
	fresh := podMap(obj.(*corev1.PodList))
	require.Equal(t, notifications(fresh), notifications(r.cache), "handlers' initial list at %s", r.rv)
	for key, p := range fresh {
		require.Equal(t, encode(t, p), encode(t, r.cache[key]), "cache differs at %s: %s", r.rv, key)
	}
}

// encode is p's protobuf bytes: equal bytes are equal pods, and comparing
// them is much cheaper than a semantic deep comparison.
func encode(t *testing.T, p *corev1.Pod) []byte {
	data, err := p.Marshal()
	require.NoError(t, err)
	return data
}

// notifications are what each handler gets from a cache handed over:
// OnAdd(obj, isInInitialList=true) for every object, in key order.
func notifications(cache map[string]*corev1.Pod) []string {
	out := make([]string, 0, len(cache))
	for key, p := range cache {
		out = append(out, fmt.Sprintf("add %s@%s initial", key, p.ResourceVersion))
	}
	slices.Sort(out)
	return out
}

// save writes the cache as the informer's next snapshot.
func (d *driver) save(r result) {
	h := scope
	h.ResourceVersion, h.Count = r.rv, len(r.cache)
	var buf bytes.Buffer
	w, err := snapshot.NewWriter(&buf, h)
	require.NoError(d.t, err)
	keys := make([]string, 0, len(r.cache))
	for k := range r.cache {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		require.NoError(d.t, w.Add(k, encode(d.t, r.cache[k])))
	}
	require.NoError(d.t, w.Commit())
	d.file, d.spoiled, d.header = buf.Bytes(), "", h
	d.journal, d.frames = nil, nil
}

// open reads the snapshot's header.
func (d *driver) open(expect *snapshot.Header) (*snapshot.Reader, error) {
	return snapshot.NewReader(bytes.NewReader(d.file), int64(len(d.file)), expect)
}

// damage flips a byte of the snapshot past its magic, or cuts it short.
func (d *driver) damage() {
	data := bytes.Clone(d.file)
	if d.rnd.IntN(2) == 0 {
		data = data[:8+d.rnd.IntN(len(data)-8)]
	} else {
		data[9+d.rnd.IntN(len(data)-9)] ^= 0x10
	}
	d.file = data
}

// inflate rewrites the snapshot with a version the server has not reached:
// a snapshot of another cluster, or from before an unbumped etcd restore.
func (d *driver) inflate() {
	r, err := d.open(nil)
	require.NoError(d.t, err)
	cache := map[string]*corev1.Pod{}
	for {
		key, value, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(d.t, err)
		p := &corev1.Pod{}
		require.NoError(d.t, p.Unmarshal(value))
		cache[string(key)] = p
	}
	d.save(result{rv: strconv.FormatUint(d.rv()+100, 10), cache: cache})
}
