package fanout

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/openinformer/cache/internal/objmeta"
)

// listenerTestRecorder records handler calls (by key and resource version)
// and can be made to block or panic.
type listenerTestRecorder struct {
	mu      sync.Mutex
	calls   []string
	gate    chan struct{} // if non-nil, every call waits for a receive
	panicOn string
}

func (r *listenerTestRecorder) record(s string) {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
	if r.panicOn != "" && s == r.panicOn {
		panic("handler bug on " + s)
	}
}

func (r *listenerTestRecorder) OnAdd(obj interface{}, initial bool) {
	r.record(fmt.Sprintf("add %s %v", listenerTestDescribe(obj), initial))
}
func (r *listenerTestRecorder) OnUpdate(o, n interface{}) {
	r.record(fmt.Sprintf("update %s->%s", listenerTestDescribe(o), listenerTestDescribe(n)))
}
func (r *listenerTestRecorder) OnDelete(obj interface{}) {
	r.record("delete " + listenerTestDescribe(obj))
}

func (r *listenerTestRecorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// listenerTestDescribe prints key@rv, or tombstone(key@rv) for a tombstone.
func listenerTestDescribe(obj interface{}) string {
	if t, ok := obj.(clientcache.DeletedFinalStateUnknown); ok {
		if t.Obj == nil {
			return "tombstone(" + t.Key + ")"
		}
		return "tombstone(" + listenerTestDescribe(t.Obj) + ")"
	}
	m, err := objmeta.Accessor(obj)
	if err != nil {
		return fmt.Sprint(obj)
	}
	return m.GetNamespace() + "/" + m.GetName() + "@" + m.GetResourceVersion()
}

// listenerTestProcessor builds a processor over a store that the test
// writes to through write, which mirrors the informer: store write and
// distribution under one lock.
type listenerTestProcessor struct {
	*Processor
	store clientcache.Store
	lock  *sync.Mutex
}

func newListenerTestProcessor(limit int) *listenerTestProcessor {
	store := clientcache.NewStore(clientcache.DeletionHandlingMetaNamespaceKeyFunc)
	lock := &sync.Mutex{}
	p := NewProcessor(Config{
		KeyFunc:       clientcache.DeletionHandlingMetaNamespaceKeyFunc,
		BacklogLimit:  limit,
		SlowThreshold: 10 * time.Second,
	})
	return &listenerTestProcessor{Processor: p, store: store, lock: lock}
}

func (p *listenerTestProcessor) listen(h Handler) *Listener {
	l := p.NewListener(testListenerOptions(klog.Background(), h, 0, "test", noMetrics()))
	p.AddListener(l, nil)
	return l
}

// testListenerOptions describe a listener for h, named after h's type as
// the informer's handler names are.
func testListenerOptions(logger klog.Logger, h Handler, period time.Duration, checker string, m Metrics) ListenerOptions {
	t := reflect.TypeOf(h)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return ListenerOptions{Logger: logger, Handler: h, Name: t.PkgPath() + "." + t.Name(), InformerChecker: checker,
		Requested: period, Effective: period, Metrics: m}
}

// noMetrics are metrics that discard what they are told.
func noMetrics() Metrics {
	return Metrics{Pending: discard{}, OldestAge: discard{}, Collapses: discard{}}
}

type discard struct{}

func (discard) Set(float64) {}
func (discard) Inc()        {}
func (discard) Dec()        {}

// upsert writes obj to the store and distributes the matching notification.
func (p *listenerTestProcessor) upsert(obj interface{}) {
	p.lock.Lock()
	defer p.lock.Unlock()
	old, exists, _ := p.store.Get(obj)
	_ = p.store.Add(obj)
	if exists {
		p.distributeOne(Notification{Kind: Update, Old: old, New: obj}, false)
	} else {
		p.distributeOne(Notification{Kind: Add, New: obj}, false)
	}
}

func (p *listenerTestProcessor) remove(obj interface{}) {
	p.lock.Lock()
	defer p.lock.Unlock()
	_ = p.store.Delete(obj)
	p.distributeOne(Notification{Kind: Delete, Old: obj}, false)
}

func (p *listenerTestProcessor) start() (stop func()) {
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() { p.Run(ch); close(done) }()
	return func() { close(ch); <-done }
}

func TestP2_PerHandlerOrderAndSlowHandlerIsolation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newListenerTestProcessor(0)
		slow := &listenerTestRecorder{gate: make(chan struct{})}
		fast := &listenerTestRecorder{}
		p.listen(slow)
		p.listen(fast)
		stop := p.start()
		var want []string
		for i := 1; i <= 300; i++ {
			p.upsert(newTestPod("ns", "a", fmt.Sprint(i)))
			if i == 1 {
				want = append(want, "add ns/a@1 false")
			} else {
				want = append(want, fmt.Sprintf("update ns/a@%d->ns/a@%d", i-1, i))
			}
		}
		synctest.Wait()
		assert.Equal(t, want, fast.got(), "fast handler got everything while the slow one is stuck")
		assert.Empty(t, slow.got())
		for range want {
			slow.gate <- struct{}{}
		}
		synctest.Wait()
		assert.Equal(t, want, slow.got(), "slow handler gets the same sequence in order")
		stop()
	})
	goleak.VerifyNone(t)
}

func TestP1_OneGoroutinePerListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newListenerTestProcessor(0)
		before := bubbleGoroutines(t)
		for i := 0; i < 5; i++ {
			p.listen(&listenerTestRecorder{})
		}
		stop := p.start()
		synctest.Wait()
		assert.Equal(t, before+1+5, bubbleGoroutines(t), "the processor's run goroutine plus one per listener")
		stop()
	})
	goleak.VerifyNone(t)
}

// bubbleGoroutines counts the goroutines in the caller's synctest bubble.
// runtime.NumGoroutine counts the whole process, where goroutines left by
// earlier tests may still be exiting, so it made this count flaky.
func bubbleGoroutines(t *testing.T) int {
	t.Helper()
	bubble := regexp.MustCompile(`, synctest bubble (\d+)[\] ]`)
	own := bubble.FindSubmatch(stacks(false))
	require.NotNil(t, own, "called outside a synctest bubble")
	n := 0
	for _, m := range bubble.FindAllSubmatch(stacks(true), -1) {
		if bytes.Equal(m[1], own[1]) {
			n++
		}
	}
	return n
}

// stacks returns runtime.Stack's text, growing the buffer until it fits.
func stacks(all bool) []byte {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, all)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

func TestP3_DistributeBeforeStartIsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newListenerTestProcessor(0)
		p.distributeOne(Notification{Kind: Add, New: newTestPod("ns", "x", "1")}, false) // no listeners: dropped
		r := &listenerTestRecorder{}
		p.listen(r)
		p.upsert(newTestPod("ns", "a", "1"))
		synctest.Wait()
		assert.Empty(t, r.got(), "not delivered before the processor runs")
		stop := p.start()
		synctest.Wait()
		assert.Equal(t, []string{"add ns/a@1 false"}, r.got())
		stop()
	})
	goleak.VerifyNone(t)
}

// TestP4_HandlerPanicLoggedAndDeliveryContinues: with ReallyCrash false,
// delivery goes on with the next notification after a one-second pause, as
// client-go's does; no pause follows a call that returned.
func TestP4_HandlerPanicLoggedAndDeliveryContinues(t *testing.T) {
	setReallyCrash(t, false)
	synctest.Test(t, func(t *testing.T) {
		p := newListenerTestProcessor(0)
		r := &listenerTestRecorder{panicOn: "add ns/a@1 true"}
		l := p.NewListener(testListenerOptions(klog.Background(), r, 0, "test", noMetrics()))
		p.AddListener(l, []interface{}{newTestPod("ns", "a", "1"), newTestPod("ns", "b", "1")})
		stop := p.start()
		p.MarkSynced()
		p.upsert(newTestPod("ns", "c", "1"))
		synctest.Wait()
		assert.Equal(t, []string{"add ns/a@1 true"}, r.got(), "paused after the panic")
		assert.False(t, l.HasSynced(), "the second initial add waits out the pause")
		time.Sleep(panicPause - time.Nanosecond)
		synctest.Wait()
		assert.Len(t, r.got(), 1, "still paused just before a second")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []string{"add ns/a@1 true", "add ns/b@1 true", "add ns/c@1 false"}, r.got(), "delivery continues after the pause")
		assert.True(t, l.HasSynced(), "a panicking initial add still counts as delivered")
		stop()
	})
	goleak.VerifyNone(t)
}

// TestP4_RemovalEndsThePauseAfterAPanic: a handler removed while delivery
// pauses after its panic is not called again, and its goroutine ends at once.
func TestP4_RemovalEndsThePauseAfterAPanic(t *testing.T) {
	setReallyCrash(t, false)
	synctest.Test(t, func(t *testing.T) {
		p := newListenerTestProcessor(0)
		r := &listenerTestRecorder{panicOn: "add ns/a@1 false"}
		l := p.listen(r)
		stop := p.start()
		p.upsert(newTestPod("ns", "a", "1"))
		p.upsert(newTestPod("ns", "b", "1"))
		synctest.Wait()
		l.shutdown()
		<-l.ShutdownChan()
		assert.Equal(t, []string{"add ns/a@1 false"}, r.got())
		stop()
	})
	goleak.VerifyNone(t)
}

func TestP5_StopDiscardsPendingAndWaitsForInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newListenerTestProcessor(0)
		r := &listenerTestRecorder{gate: make(chan struct{})}
		l := p.listen(r)
		stop := p.start()
		for i := 1; i <= 5; i++ {
			p.upsert(newTestPod("ns", fmt.Sprint(i), "1"))
		}
		synctest.Wait() // first call in flight
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("stop returned while a handler call was in flight")
		default:
		}
		r.gate <- struct{}{}
		<-stopped
		assert.Equal(t, []string{"add ns/1@1 false"}, r.got(), "pending notifications discarded")
		<-l.ShutdownChan()
		p.upsert(newTestPod("ns", "late", "1"))
		assert.False(t, p.AddListener(p.NewListener(testListenerOptions(klog.Background(), r, 0, "test", noMetrics())), nil), "stopped processor never starts listeners")
	})
	goleak.VerifyNone(t)
}

func TestP5_RemovedListenerStopsWithinATakenBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newListenerTestProcessor(0)
		r := &listenerTestRecorder{gate: make(chan struct{})}
		l := p.listen(r)
		for i := 1; i <= 5; i++ { // queued before start: one batch takes all five
			p.upsert(newTestPod("ns", fmt.Sprint(i), "1"))
		}
		stop := p.start()
		synctest.Wait() // first call in flight, the other four taken with it
		require.NoError(t, p.RemoveListener(l))
		r.gate <- struct{}{}
		<-l.ShutdownChan()
		assert.Equal(t, []string{"add ns/1@1 false"}, r.got(), "a removed handler is not called again")
		stop()
	})
	goleak.VerifyNone(t)
}

func TestI17_ResyncMarksFollowPeriodsAndClock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	p := NewProcessor(Config{Clock: clk})
	mk := func(period time.Duration) *Listener {
		l := p.NewListener(testListenerOptions(klog.Background(), &listenerTestRecorder{}, period, "test", noMetrics()))
		p.AddListener(l, nil)
		return l
	}
	none, ten, thirty := mk(0), mk(10*time.Second), mk(30*time.Second)
	assert.True(t, none.syncing && ten.syncing && thirty.syncing, "listeners start syncing")
	assert.False(t, p.ShouldResync())
	assert.False(t, none.syncing || ten.syncing || thirty.syncing)
	clk.Step(10 * time.Second)
	assert.True(t, p.ShouldResync(), "due exactly at creation + period")
	assert.Equal(t, []bool{false, true, false}, []bool{none.syncing, ten.syncing, thirty.syncing})
	clk.Step(10 * time.Second)
	p.ShouldResync()
	assert.Equal(t, []bool{false, true, false}, []bool{none.syncing, ten.syncing, thirty.syncing})
	clk.Step(10 * time.Second)
	p.ShouldResync()
	assert.Equal(t, []bool{false, true, true}, []bool{none.syncing, ten.syncing, thirty.syncing})
}

func TestI16_SyncNotificationsOnlyReachSyncingListeners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewProcessor(Config{})
		mk := func(period time.Duration) *listenerTestRecorder {
			r := &listenerTestRecorder{}
			p.AddListener(p.NewListener(testListenerOptions(klog.Background(), r, period, "test", noMetrics())), nil)
			return r
		}
		resyncing, quiet := mk(time.Second), mk(0)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { p.Run(stop); close(done) }()
		pod := newTestPod("ns", "a", "1")
		p.distributeOne(Notification{Kind: Update, Old: pod, New: pod}, true)
		time.Sleep(time.Second)
		p.ShouldResync()
		p.distributeOne(Notification{Kind: Update, Old: pod, New: pod}, true)
		p.distributeOne(Notification{Kind: Delete, Old: pod}, false)
		synctest.Wait()
		assert.Equal(t, []string{"update ns/a@1->ns/a@1", "update ns/a@1->ns/a@1", "delete ns/a@1"}, resyncing.got())
		assert.Equal(t, []string{"update ns/a@1->ns/a@1", "delete ns/a@1"}, quiet.got(), "initially syncing, later only non-sync")
		close(stop)
		<-done
	})
	goleak.VerifyNone(t)
}

func TestI8_EffectiveResyncPeriod(t *testing.T) {
	lg := klog.Background()
	assert.Equal(t, time.Duration(0), EffectiveResyncPeriod(lg, 0, time.Minute))
	assert.Equal(t, time.Duration(0), EffectiveResyncPeriod(lg, time.Minute, 0), "an informer without resync never resyncs")
	assert.Equal(t, time.Minute, EffectiveResyncPeriod(lg, time.Second, time.Minute))
	assert.Equal(t, time.Hour, EffectiveResyncPeriod(lg, time.Hour, time.Minute))
}

func TestI10_ListenerSyncedAfterUpstreamAndInitialAdds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newListenerTestProcessor(0)
		r := &listenerTestRecorder{gate: make(chan struct{})}
		l := p.NewListener(testListenerOptions(klog.Background(), r, 0, "SharedIndexInformer *v1.Pod", noMetrics()))
		assert.Equal(t, "SharedIndexInformer *v1.Pod + event handler github.com/openinformer/cache/internal/fanout.listenerTestRecorder", l.HasSyncedChecker().Name())
		p.AddListener(l, []interface{}{newTestPod("ns", "a", "1")})
		stop := p.start()
		r.gate <- struct{}{}
		synctest.Wait()
		assert.False(t, l.HasSynced(), "upstream not synced yet")
		p.MarkSynced()
		assert.True(t, l.HasSynced())

		late := p.NewListener(testListenerOptions(klog.Background(), r, 0, "x", noMetrics()))
		p.AddListener(late, []interface{}{newTestPod("ns", "a", "1")})
		assert.False(t, late.HasSynced(), "initial add of a late listener still pending")
		r.gate <- struct{}{}
		<-late.HasSyncedChecker().Done()
		stop()
	})
	goleak.VerifyNone(t)
}

// newGatedLagListener is a processor with one listener reporting its lag to
// m, whose handler waits on r.gate for every call.
func newGatedLagListener() (*listenerTestProcessor, *listenerTestMetrics, *listenerTestRecorder) {
	m := &listenerTestMetrics{}
	p := newListenerTestProcessor(0)
	r := &listenerTestRecorder{gate: make(chan struct{})}
	p.AddListener(p.NewListener(testListenerOptions(klog.Background(), r, 0, "test", m.metrics())), nil)
	return p, m, r
}

// releaseAndExpectNoLag lets n handler calls through and checks that the
// lag metrics drop to zero once they are done.
func releaseAndExpectNoLag(t *testing.T, r *listenerTestRecorder, m *listenerTestMetrics, n int) {
	t.Helper()
	for range n {
		r.gate <- struct{}{}
	}
	synctest.Wait()
	assert.Equal(t, 0.0, m.pending.Load())
	assert.Equal(t, 0.0, m.age.Load())
}

func TestHandlerLagMetricsAndSlowHandlerWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, m, r := newGatedLagListener()
		stop := p.start()
		p.upsert(newTestPod("ns", "a", "1"))
		synctest.Wait() // first call in flight, nothing pending
		p.upsert(newTestPod("ns", "a", "2"))
		time.Sleep(15 * time.Second)
		p.upsert(newTestPod("ns", "a", "3"))
		assert.Equal(t, 2.0, m.pending.Load())
		assert.Equal(t, 15.0, m.age.Load(), "age of the oldest pending notification")
		releaseAndExpectNoLag(t, r, m, 3)
		stop()
	})
	goleak.VerifyNone(t)
}

func TestHandlerLagCountsNotificationsTakenIntoABatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, m, r := newGatedLagListener()
		for i := range 10 { // queued before start: one batch takes all ten
			p.upsert(newTestPod("ns", fmt.Sprint(i), "1"))
		}
		stop := p.start()
		synctest.Wait() // first call in flight, nine more taken with it
		assert.Equal(t, 9.0, m.pending.Load(), "taken but not yet delivered counts as pending")
		time.Sleep(15 * time.Second)
		p.upsert(newTestPod("ns", "late", "1"))
		assert.Equal(t, 10.0, m.pending.Load())
		assert.Equal(t, 15.0, m.age.Load(), "the oldest waiting notification is in the taken batch")
		releaseAndExpectNoLag(t, r, m, 11)
		stop()
	})
	goleak.VerifyNone(t)
}

// A handler stuck in one call while nothing new arrives: the age gauge keeps advancing, from
// the notification it is stuck on, and with others waiting behind it.
func TestHandlerLagAgeAdvancesWhileTheHandlerIsStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, m, r := newGatedLagListener()
		stop := p.start()
		p.upsert(newTestPod("ns", "a", "1"))
		synctest.Wait() // stuck in the first call, nothing pending
		time.Sleep(30 * time.Second)
		synctest.Wait()
		assert.Equal(t, 0.0, m.pending.Load())
		assert.Equal(t, 30.0, m.age.Load(), "age of the notification the handler is stuck on")
		p.upsert(newTestPod("ns", "a", "2"))
		time.Sleep(15*time.Second + lagRefreshInterval/2)
		synctest.Wait()
		assert.Equal(t, 1.0, m.pending.Load())
		assert.Equal(t, 45.0, m.age.Load(), "refreshed every lagRefreshInterval")
		releaseAndExpectNoLag(t, r, m, 2)
		time.Sleep(5 * lagRefreshInterval)
		synctest.Wait()
		assert.Equal(t, 0.0, m.age.Load(), "an idle handler's refreshes leave the gauge at zero")
		stop()
	})
	goleak.VerifyNone(t)
}

func TestSlowHandlerWarningNamesHandlerAndIsRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out syncBuffer
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&out)))
		p := newListenerTestProcessor(0)
		r := &listenerTestRecorder{gate: make(chan struct{})}
		p.AddListener(p.NewListener(testListenerOptions(logger, r, 0, "test", noMetrics())), nil)
		stop := p.start()
		p.upsert(newTestPod("ns", "a", "1"))
		synctest.Wait() // stuck in the first call
		p.upsert(newTestPod("ns", "a", "2"))
		time.Sleep(9 * time.Second)
		p.upsert(newTestPod("ns", "a", "3"))
		assert.Empty(t, out.String(), "below the 10s threshold")
		time.Sleep(time.Second)
		p.upsert(newTestPod("ns", "a", "4"))
		time.Sleep(30 * time.Second)
		p.upsert(newTestPod("ns", "a", "5"))
		assert.Equal(t, 1, strings.Count(out.String(), "event handler is lagging behind"), "at most once a minute")
		assert.Contains(t, out.String(), `handler="github.com/openinformer/cache/internal/fanout.listenerTestRecorder" pendingNotifications=3 oldestPendingAge="10s"`)
		time.Sleep(30 * time.Second)
		p.upsert(newTestPod("ns", "a", "6"))
		assert.Equal(t, 2, strings.Count(out.String(), "event handler is lagging behind"))
		close(r.gate)
		synctest.Wait()
		stop()
	})
	goleak.VerifyNone(t)
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestBacklogBoundCollapsesIntoResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, m, r := newGatedLagListener()
		// The handler already saw a@1, b@1, c@1, gone@1 and back@1; then its
		// backlog gets bounded to 4.
		for _, name := range []string{"a", "b", "c", "gone", "back"} {
			p.upsert(newTestPod("ns", name, "1"))
		}
		stop := p.start()
		for range 5 {
			r.gate <- struct{}{}
		}
		synctest.Wait()
		p.cfg.BacklogLimit = 4
		p.upsert(newTestPod("ns", "a", "2")) // in flight, blocked in the handler
		synctest.Wait()
		p.upsert(newTestPod("ns", "a", "3"))
		p.upsert(newTestPod("ns", "b", "2"))
		p.remove(newTestPod("ns", "gone", "1"))
		p.upsert(newTestPod("ns", "new", "1"))
		p.upsert(newTestPod("ns", "a", "4")) // 5th pending: collapse
		p.upsert(newTestPod("ns", "brief", "1"))
		p.remove(newTestPod("ns", "brief", "1"))
		p.upsert(newTestPod("ns", "b", "3"))
		p.upsert(newTestPod("ns", "c", "2"))
		p.remove(newTestPod("ns", "c", "2"))
		p.remove(newTestPod("ns", "back", "1"))
		p.upsert(newTestPod("ns", "back", "2"))
		assert.Equal(t, int32(1), m.collapses.Load())
		assert.Equal(t, 7.0, m.pending.Load(), "pending counts collapsed keys")
		for range 8 {
			r.gate <- struct{}{}
		}
		synctest.Wait()
		assert.Equal(t, []string{
			"add ns/a@1 false", "add ns/b@1 false", "add ns/c@1 false", "add ns/gone@1 false", "add ns/back@1 false",
			"update ns/a@1->ns/a@2",
			// The resync, sorted by key; brief came and went: nothing.
			"update ns/a@2->ns/a@4",
			"update ns/b@1->ns/b@3",
			"delete ns/back@1", "add ns/back@2 false", // the dropped delete is kept, then the new object
			"delete tombstone(ns/c@1)", // updated then deleted: last seen state in a tombstone
			"delete ns/gone@1",
			"add ns/new@1 false",
		}, r.got())
		// After the resync the listener queues normally again.
		p.upsert(newTestPod("ns", "a", "5"))
		r.gate <- struct{}{}
		synctest.Wait()
		assert.Equal(t, "update ns/a@4->ns/a@5", r.got()[len(r.got())-1])
		stop()
	})
	goleak.VerifyNone(t)
}

func TestBacklogBoundKeepsInitialListSyncAccounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newListenerTestProcessor(2)
		var initial []interface{}
		for i := 0; i < 5; i++ {
			pod := newTestPod("ns", fmt.Sprint(i), "1")
			require.NoError(t, p.store.Add(pod))
			initial = append(initial, pod)
		}
		r := &listenerTestRecorder{}
		l := p.NewListener(testListenerOptions(klog.Background(), r, 0, "test", noMetrics()))
		p.AddListener(l, initial)
		p.MarkSynced()
		assert.False(t, l.HasSynced())
		stop := p.start()
		synctest.Wait()
		assert.Equal(t, []string{"add ns/0@1 true", "add ns/1@1 true", "add ns/2@1 true", "add ns/3@1 true", "add ns/4@1 true"}, r.got())
		assert.True(t, l.HasSynced())
		stop()
	})
	goleak.VerifyNone(t)
}

func TestRemoveListenerErrorsAndIdempotence(t *testing.T) {
	p := newListenerTestProcessor(0)
	l := p.listen(&listenerTestRecorder{})
	require.NoError(t, p.RemoveListener(l))
	<-l.ShutdownChan()
	require.NoError(t, p.RemoveListener(l), "second removal is a no-op")
	err := p.RemoveListener(clientcacheForeignHandle{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid key type")
}

type clientcacheForeignHandle struct{}

func (clientcacheForeignHandle) HasSynced() bool                           { return false }
func (clientcacheForeignHandle) HasSyncedChecker() clientcache.DoneChecker { return nil }

// A lagging handler's backlog is mostly notifications, so their size is
// the backlog's memory per pending event.
func TestNotificationTakes40Bytes(t *testing.T) {
	assert.Equal(t, uintptr(40), unsafe.Sizeof(Notification{}))
}

// Ages are right across the 32-bit wrap of the millisecond stamp.
func TestStampAgeAcrossWrap(t *testing.T) {
	wrap := time.Duration(1<<32) * time.Millisecond
	for _, at := range []time.Duration{0, time.Hour, wrap - time.Second, wrap, 3*wrap + 5*time.Second} {
		s := stampAt(at)
		assert.Equal(t, time.Duration(0), s.age(at), "at %v", at)
		assert.Equal(t, 90*time.Second, s.age(at+90*time.Second), "at %v", at)
		assert.Equal(t, 24*time.Hour, s.age(at+24*time.Hour), "at %v", at)
	}
}

// distributeOne is distribute for a single notification.
func (p *Processor) distributeOne(n Notification, isSync bool) {
	ns, sync := [1]Notification{n}, [1]bool{isSync}
	p.distribute(ns[:], sync[:])
}

// listenerTestMetrics captures handler lag metrics.
type listenerTestMetrics struct {
	pending, age atomic.Value
	collapses    atomic.Int32
}

type listenerTestGauge struct{ v *atomic.Value }

func (g listenerTestGauge) Set(f float64) { g.v.Store(f) }
func (g listenerTestGauge) Inc()          {}
func (g listenerTestGauge) Dec()          {}

type listenerTestCounter struct{ n *atomic.Int32 }

func (c listenerTestCounter) Inc() { c.n.Add(1) }

// metrics are one listener's metrics, recorded in m.
func (m *listenerTestMetrics) metrics() Metrics {
	return Metrics{Enabled: true, Pending: listenerTestGauge{&m.pending}, OldestAge: listenerTestGauge{&m.age}, Collapses: listenerTestCounter{&m.collapses}}
}

// newTestPod is a pod at resource version rv.
func newTestPod(namespace, name, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: rv}}
}

// setReallyCrash sets utilruntime.ReallyCrash for the test and restores it.
func setReallyCrash(t *testing.T, v bool) {
	old := utilruntime.ReallyCrash
	utilruntime.ReallyCrash = v
	t.Cleanup(func() { utilruntime.ReallyCrash = old })
}

// TestHandlerPanicPropagatesFromDelivery: under the default ReallyCrash a
// handler's panic leaves the listener's delivery after PanicHandlers ran.
func TestHandlerPanicPropagatesFromDelivery(t *testing.T) {
	require.True(t, utilruntime.ReallyCrash)
	var reported []interface{}
	saved := utilruntime.PanicHandlers
	utilruntime.PanicHandlers = []func(context.Context, interface{}){func(_ context.Context, r interface{}) { reported = append(reported, r) }}
	defer func() { utilruntime.PanicHandlers = saved }()
	p := newListenerTestProcessor(0)
	l := p.NewListener(testListenerOptions(klog.Background(), &listenerTestRecorder{panicOn: "add ns/a@1 false"}, 0, "test", noMetrics()))
	assert.PanicsWithValue(t, "handler bug on add ns/a@1 false", func() {
		l.deliver(Notification{Kind: Add, New: newTestPod("ns", "a", "1")})
	})
	assert.Equal(t, []interface{}{"handler bug on add ns/a@1 false"}, reported)
}
