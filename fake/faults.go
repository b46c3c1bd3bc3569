package fake

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// FailNextLists makes the next n LIST requests fail with err (see the error constructors below).
// Calls add up: FailNextLists(2, a) then FailNextLists(1, b) fails with a, a, b. A nil err
// means DefaultFault(), so a test asking for a failure always gets one.
func (s *Server) FailNextLists(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listFaults = appendFaults(s.listFaults, n, err)
}

// FailNextWatches makes the next n WATCH requests fail to start with err, the way a watch
// request fails before the server sends a response (429, 500, connection refused, ...). Calls
// add up as for FailNextLists, and a nil err means DefaultFault().
func (s *Server) FailNextWatches(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchFaults = appendFaults(s.watchFaults, n, err)
}

// DefaultFault is the error FailNextLists and FailNextWatches inject when given a nil error: a
// 500 InternalError, which every client treats as transient and retries after a backoff.
func DefaultFault() error {
	return InternalError("fake: injected fault")
}

// faultRun is n queued failures with the same error, kept as one entry so
// that a test blocking a server with a huge n costs nothing.
type faultRun struct {
	err error
	n   int
}

// appendFaults queues n failures with err; a nil err would otherwise read as "no fault" when
// the request takes it, and the failure the test asked for would silently not happen.
func appendFaults(faults []faultRun, n int, err error) []faultRun {
	if err == nil {
		err = DefaultFault()
	}
	if n <= 0 {
		return faults
	}
	return append(faults, faultRun{err: err, n: n})
}

func takeFault(faults *[]faultRun) error {
	if len(*faults) == 0 {
		return nil
	}
	run := &(*faults)[0]
	run.n--
	err := run.err
	if run.n == 0 {
		*faults = (*faults)[1:]
	}
	return err
}

// streamFaults are the faults of a misbehaving server rather than of a
// failing request. Guarded by the server's mu.
type streamFaults struct {
	dropInitialEventsEnd bool
	nilWatches           int
	interrupts           []interrupt
}

// interrupt is n queued watch interruptions alike.
type interrupt struct {
	after, n int
	err      error
}

// InterruptNextWatches makes the next n WATCH requests that the server accepts (one failed by
// FailNextWatches or ReturnNilWatches does not count) end after delivering after events,
// bookmarks included: with an ERROR event carrying err's status (410 Expired, for instance, as
// when the watch cache's window moves past the watch), or, when err is nil, closed like a
// dropped connection. after <= 0 ends them before any event. A restart's catch-up watch, the
// first WATCH of a warm start, meets it without a test having to catch that watch open. Calls
// add up.
func (s *Server) InterruptNextWatches(n, after int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > 0 {
		s.interrupts = append(s.interrupts, interrupt{after: max(after, 0), n: n, err: err})
	}
}

// takeInterrupt arms w with the next queued interruption, if any. Called with mu held, once w
// is accepted and its initial events queued.
func (s *Server) takeInterrupt(w *watcher) {
	if len(s.interrupts) == 0 {
		return
	}
	in := &s.interrupts[0]
	in.n--
	after, err := in.after, in.err
	if in.n == 0 {
		s.interrupts = s.interrupts[1:]
	}
	var final *watch.Event
	if err != nil {
		ev := errorEvent(err)
		final = &ev
	}
	w.interruptAfter(after, final)
}

// DropInitialEventsEnd makes watch-list streams (sendInitialEvents=true) leave out the bookmark
// annotated k8s.io/initial-events-end, as an aggregated API server or a proxy that drops it does
// (kubernetes#140890): the stream carries the initial ADDED events and then live events, and a
// client waiting for the bookmark never syncs. DropInitialEventsEnd(false) sends it again.
func (s *Server) DropInitialEventsEnd(drop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropInitialEventsEnd = drop
}

// ReturnNilWatches makes the next n WATCH requests return a nil watch.Interface and a nil error,
// as a broken ListerWatcher may; client-go's Reflector then dereferences the nil watch. The
// request is recorded. Calls add up.
func (s *Server) ReturnNilWatches(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nilWatches += max(n, 0)
}

// takeNilWatch reports whether this watch request returns (nil, nil). Called with mu held.
func (s *Server) takeNilWatch() bool {
	if s.nilWatches == 0 {
		return false
	}
	s.nilWatches--
	return true
}

// CloseWatches ends every open watch now, like a dropped connection: the result channels close
// and events not yet delivered are discarded (a client resumes from the last RV it saw). It
// returns how many watches were closed.
func (s *Server) CloseWatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeWatchesLocked()
}

func (s *Server) closeWatchesLocked() int {
	n := len(s.watchers)
	for w := range s.watchers {
		w.terminate()
		delete(s.watchers, w)
	}
	return n
}

// CloseWatchesAfter makes every open watch close after delivering n more events (bookmarks
// included), like a connection that drops mid-stream; n <= 0 closes them now, like CloseWatches.
func (s *Server) CloseWatchesAfter(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.closeAfter(n)
	}
}

// SendWatchError queues a watch.Error event carrying err's status on every open watch, after
// the events already queued; the watch then closes, as the API server ends a watch after an
// ERROR event. Non-API errors are sent as 500 InternalError.
func (s *Server) SendWatchError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.fail(errorEvent(err))
		delete(s.watchers, w)
	}
}

// Compact drops the whole event history, like an etcd compaction seen by the watch cache:
// watches and exact lists from any resourceVersion older than the current one get 410, and
// continue tokens issued before expire.
func (s *Server) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = nil
	s.floor = s.rv
}

// Restart simulates an API server restarted on restored storage: the resourceVersion jumps by
// jump (at least 1), history is dropped (old RVs and continue tokens get 410) and every open
// watch is closed. Stored objects keep their data and resourceVersions, like an etcd restore
// with --bump-revision.
func (s *Server) Restart(jump uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv += max(jump, 1)
	s.history = nil
	s.floor = s.rv
	s.closeWatchesLocked()
}

// HoldEvents stops event delivery on every watch, new ones included (events keep queueing,
// nothing is lost or blocked), until the returned release function is called. An event a watch
// was already handing to a waiting receiver may still arrive; everything written after
// HoldEvents returns waits. Release is idempotent.
func (s *Server) HoldEvents() (release func()) {
	s.gateMu.Lock()
	defer s.gateMu.Unlock()
	if s.gate == nil {
		s.gate = make(chan struct{})
	}
	gate := s.gate
	return func() {
		s.gateMu.Lock()
		defer s.gateMu.Unlock()
		if s.gate == gate {
			close(gate)
			s.gate = nil
		}
	}
}

// heldGate returns nil when delivery is open, else a channel closed on release.
func (s *Server) heldGate() chan struct{} {
	s.gateMu.Lock()
	defer s.gateMu.Unlock()
	return s.gate
}

// TooManyRequests is the 429 a throttling API server returns, with Retry-After seconds.
func TooManyRequests(retryAfterSeconds int) error {
	return apierrors.NewTooManyRequests("the server has received too many requests and has asked us to try again later", retryAfterSeconds)
}

// InternalError is a 500 InternalError status.
func InternalError(msg string) error {
	return apierrors.NewInternalError(fmt.Errorf("%s", msg))
}

// Expired is the 410 Gone status with reason Expired that the API server uses for
// resourceVersions and continue tokens that fell out of its window.
func Expired(msg string) error {
	return apierrors.NewResourceExpired(msg)
}

// Gone is a 410 Gone status with reason Gone.
func Gone(msg string) error {
	return apierrors.NewGone(msg)
}

// ConnectionRefused is the error a client gets when the API server is down: a dial error
// wrapping syscall.ECONNREFUSED, so k8s.io/apimachinery/pkg/util/net.IsConnectionRefused matches.
func ConnectionRefused() error {
	return &url.Error{
		Op:  "Get",
		URL: "https://127.0.0.1:6443/api",
		Err: &net.OpError{
			Op:  "dial",
			Net: "tcp",
			Err: os.NewSyscallError("connect", syscall.ECONNREFUSED),
		},
	}
}

// tooLargeRV is the API server's "Too large resource version" error: a 504 Timeout status with
// cause ResourceVersionTooLarge (k8s.io/apiserver storage.NewTooLargeResourceVersionError).
func tooLargeRV(requested, current uint64, retrySeconds int) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", requested, current), retrySeconds)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

// errorEvent converts err into the ERROR event an API server sends: its Status object.
func errorEvent(err error) watch.Event {
	var status metav1.Status
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		status = apiStatus.Status()
	} else {
		status = apierrors.NewInternalError(err).ErrStatus
	}
	return watch.Event{Type: watch.Error, Object: &status}
}
