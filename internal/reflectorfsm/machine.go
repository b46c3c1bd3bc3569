// Package reflectorfsm holds every decision a Reflector makes while it
// lists and watches — which request to send next, with which options, when
// to back off, when to relist and when to give up — as a plain state
// machine. It does no I/O and starts no goroutines: the caller performs each
// Action and feeds the outcome back as an Input, so every rule can be tested
// by stepping the machine by hand.
package reflectorfsm

import (
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DefaultPageSize is the page size of chunked lists, the same as
// k8s.io/client-go/tools/pager's default.
const DefaultPageSize = 500

// veryShortWatch is how quickly a watch must close, having delivered
// nothing, to be treated as a failure rather than an ordinary timeout.
const veryShortWatch = time.Second

// internalErrorQuietReset is how long without internal errors starts a new
// retry window for them.
const internalErrorQuietReset = time.Minute

// EndBookmarkPatience is how long a watch-list stream may go without any
// event before its end-of-initial-events bookmark counts as missing. A
// server sends the initial events as one burst with the bookmark right
// behind it, so a quiet minute means the bookmark is not coming (an
// aggregated API server or a proxy that drops it). A stream that closes
// cleanly, without the bookmark, after at least this long counts the same.
const EndBookmarkPatience = time.Minute

// missedBookmarksLimit is how many watch-list streams in a row may miss
// their end bookmark before the reflector lists and watches instead, for
// good. One miss may be a proxy's stall; two are a server that does not
// send it.
const missedBookmarksLimit = 2

// Config is fixed for the lifetime of a Machine.
type Config struct {
	// TypeDescription names the listed type in returned errors.
	TypeDescription string
	// UseWatchList makes each ListAndWatch try watch-list streaming first.
	UseWatchList bool
	// MinWatchTimeout and MaxWatchTimeout bound the server-side timeout of
	// each watch request.
	MinWatchTimeout, MaxWatchTimeout time.Duration
	// Rand returns a number in [0, 1) used to spread watch timeouts.
	Rand func() float64
}

// Kind is what an Action asks the caller to do.
type Kind int

// The kinds of Action.
const (
	// List the resource with Action.Options, page by page when
	// Action.PageSize is non-zero, and report ListDone.
	List Kind = iota
	// WatchList opens a watch with Action.Options, collects the initial
	// events until the end-of-initial-events bookmark and reports
	// WatchListDone.
	WatchList
	// Replace swaps the store's content for what the last List or
	// WatchList returned, at Action.ResourceVersion, and reports Replaced.
	Replace
	// Watch applies watch events to the store, on a new watch opened with
	// Action.Options or, when Action.Reuse is set, on the stream the
	// watch-list left open; it reports WatchStartFailed or WatchEnded.
	Watch
	// Return ends this ListAndWatch with Action.Err.
	Return
)

// Action is one instruction to the caller.
type Action struct {
	Kind Kind
	// Backoff asks the caller to wait one step of the shared backoff first.
	Backoff bool
	// Options are the request options of List, WatchList and Watch.
	Options metav1.ListOptions
	// PageSize is the List page size; zero lists in one request.
	PageSize int64
	// Reuse continues the watch-list stream instead of opening a watch.
	Reuse bool
	// PropagateRV tells Watch whether each event's resource version is
	// recorded from the start, or only from the first event that is not a
	// synthetic Added of the initial state.
	PropagateRV bool
	// ResourceVersion is the version Replace stores.
	ResourceVersion string
	// Err is the result of Return.
	Err error
	// Note is an error worth logging that does not change the result.
	Note error
	// Report is a fault of the server or the ListerWatcher, to report
	// through HandleError before the action; it is set once per fault.
	Report error
	// Patience is, for WatchList, how long the stream may go without an
	// event before the caller ends it and reports WatchListDone.Quiet.
	Patience time.Duration
}

// Abandoned reports whether a stop requested before the action starts
// skips it. Every action but Replace is: a Replace hands over state
// already received in full (a LIST, or a watch-list stream up to its end
// bookmark), so the store gets it even when the stop lands right after,
// which is what client-go does.
func (a Action) Abandoned() bool { return a.Kind != Replace }

// Input is the outcome of an Action, fed back with Step.
type Input interface{ input() }

// Begin starts a ListAndWatch.
type Begin struct {
	// PageSize is Reflector.WatchListPageSize at this moment.
	PageSize int64
	// MaxInternalErrorRetry is Reflector.MaxInternalErrorRetryDuration.
	MaxInternalErrorRetry time.Duration
	// Supplied says the caller holds the result of a list at
	// SuppliedResourceVersion (a warm restart's caught-up snapshot, rule
	// W1): the machine answers Replace at once, without a request, then
	// watches from that version as after any LIST.
	Supplied                bool
	SuppliedResourceVersion string
	// Consistent makes the lists until the next sync consistent reads
	// (resourceVersion ""), never "0", which a lagging watch cache may
	// serve from before a state the caller has seen (rule W2: a warm
	// restart's fallback).
	Consistent bool
}

// ListDone reports a finished List.
type ListDone struct {
	Err             error
	ResourceVersion string
	Paginated       bool
}

// WatchListDone reports a watch-list attempt: a failure to open the stream
// or an error on it (Err), a close before the end bookmark (neither), or the
// end bookmark at ResourceVersion (Synced). Quiet reports a stream the
// caller ended after Action.Patience without an event; Lasted is how long
// the stream was open.
type WatchListDone struct {
	Err             error
	Synced          bool
	ResourceVersion string
	Quiet           bool
	Lasted          time.Duration
}

// Replaced reports the store's Replace; Err is already worded for the user.
type Replaced struct{ Err error }

// WatchStartFailed reports that a watch could not be opened.
type WatchStartFailed struct{ Err error }

// WatchEnded reports the end of a watch: Err is nil for a clean close.
type WatchEnded struct {
	Err error
	At  time.Time
}

func (Begin) input()            {}
func (ListDone) input()         {}
func (WatchListDone) input()    {}
func (Replaced) input()         {}
func (WatchStartFailed) input() {}
func (WatchEnded) input()       {}

type phase int

const (
	phaseIdle phase = iota
	phaseWatchList
	phaseList
	phaseReplaceWatchList
	phaseReplaceList
	phaseReplaceSupplied
	phaseWatch
)

// Machine is the reflector's decision state. It is not safe for concurrent
// use; the Reflector serialises access.
type Machine struct {
	cfg Config

	lastSyncRV      string
	rvUnavailable   bool
	paginatedResult bool

	phase            phase
	pageSizeOverride int64
	listRV           string
	listPageSize     int64
	listRetried      bool
	pendingRV        string
	propagateRV      bool
	internalRetry    Deadline

	// missedBookmarks counts watch-list streams since the last sync that
	// ended without their end bookmark; at missedBookmarksLimit,
	// watchListOff turns streaming off for the machine's lifetime.
	missedBookmarks int
	watchListOff    bool
	// badRVReported is set once a resource version that is not a number
	// was reported.
	badRVReported bool
}

// New returns a Machine that has synced nothing yet.
func New(cfg Config) *Machine {
	return &Machine{cfg: cfg}
}

// LastSyncResourceVersion is the version of the last list, watch-list or
// recorded watch event.
func (m *Machine) LastSyncResourceVersion() string { return m.lastSyncRV }

// ObserveEvent records the resource version of a watch event applied to
// the store and reports whether it was recorded. Versions of synthetic Added
// events that open a watch from "" or "0" are skipped until another kind of
// event proves the initial state is over.
func (m *Machine) ObserveEvent(rv string, pastInitialAdds bool) bool {
	if !m.propagateRV && !pastInitialAdds {
		return false
	}
	m.lastSyncRV = rv
	return true
}

// Watching reports whether the machine is past its list, in the watch
// phase: the store then holds a complete state, and no relist is under way.
func (m *Machine) Watching() bool { return m.phase == phaseWatch }

// IsVeryShortWatch reports whether a watch that closed after d with n
// events counts as a failure.
func IsVeryShortWatch(d time.Duration, n int) bool {
	return d < veryShortWatch && n == 0
}

// Step feeds an outcome to the machine and returns what to do next.
func (m *Machine) Step(in Input) Action {
	switch in := in.(type) {
	case Begin:
		return m.begin(in)
	case WatchListDone:
		return m.watchListDone(in)
	case ListDone:
		return m.listDone(in)
	case Replaced:
		return m.replaced(in)
	case WatchStartFailed:
		return m.watchStartFailed(in)
	case WatchEnded:
		return m.watchEnded(in)
	}
	return Action{Kind: Return, Err: fmt.Errorf("reflector state machine: unexpected input %T", in)}
}

func (m *Machine) begin(in Begin) Action {
	m.internalRetry = Deadline{MaxRetry: in.MaxInternalErrorRetry, MinReset: internalErrorQuietReset}
	m.pageSizeOverride = in.PageSize
	if in.Consistent {
		m.rvUnavailable = true
	}
	if in.Supplied {
		// Until the hand-over succeeds, a relist must not go back before
		// the supplied version.
		m.rvUnavailable = true
		m.phase = phaseReplaceSupplied
		m.pendingRV = in.SuppliedResourceVersion
		return Action{Kind: Replace, ResourceVersion: in.SuppliedResourceVersion, Report: m.checkRV(in.SuppliedResourceVersion)}
	}
	if m.cfg.UseWatchList && !m.watchListOff {
		return m.watchList()
	}
	return m.list()
}

func (m *Machine) watchList() Action {
	m.phase = phaseWatchList
	rv := m.lastSyncRV
	if m.rvUnavailable {
		rv = ""
	}
	return Action{Kind: WatchList, Options: metav1.ListOptions{
		ResourceVersion:      rv,
		AllowWatchBookmarks:  true,
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		TimeoutSeconds:       m.watchTimeout(),
	}, Patience: EndBookmarkPatience}
}

func (m *Machine) watchListDone(in WatchListDone) Action {
	class := Classify(in.Err)
	switch {
	case in.Synced:
		m.rvUnavailable = false
		m.missedBookmarks = 0
		m.phase = phaseReplaceWatchList
		m.pendingRV = in.ResourceVersion
		return Action{Kind: Replace, ResourceVersion: in.ResourceVersion, Report: m.checkRV(in.ResourceVersion)}
	case in.Quiet || (class == ClassNone && in.Lasted >= EndBookmarkPatience):
		return m.missedBookmark()
	case class == ClassNone:
		return m.watchList()
	case class.retriable():
		a := m.watchList()
		a.Backoff = true
		return a
	case class.rvUnusable():
		m.rvUnavailable = true
		return m.watchList()
	default:
		a := m.list()
		a.Note = in.Err
		return a
	}
}

// missedBookmark counts a watch-list stream that missed its end bookmark:
// streaming is tried again until the limit, then turned off for good and
// the reason reported.
func (m *Machine) missedBookmark() Action {
	m.missedBookmarks++
	if m.missedBookmarks < missedBookmarksLimit {
		return m.watchList()
	}
	m.watchListOff = true
	a := m.list()
	a.Report = fmt.Errorf("%d watch-list streams of %v in a row went %v without an event or closed without the bookmark that ends their initial events (annotation %s); listing and watching instead from now on",
		m.missedBookmarks, m.cfg.TypeDescription, EndBookmarkPatience, metav1.InitialEventsAnnotationKey)
	return a
}

// checkRV reports, once, a resource version that is neither empty nor a
// number: API servers send decimal numbers, and a watch from anything else
// fails. The version is still used as given, as client-go does.
func (m *Machine) checkRV(rv string) error {
	if rv == "" || m.badRVReported {
		return nil
	}
	if _, err := strconv.ParseUint(rv, 10, 64); err == nil {
		return nil
	}
	m.badRVReported = true
	return fmt.Errorf("the list of %v has resourceVersion %q, which is not a version the API server issues; watching from it anyway", m.cfg.TypeDescription, rv)
}

// list starts the LIST path. The page size chosen here also serves the one
// retry at "" after a rejected resource version.
func (m *Machine) list() Action {
	m.phase = phaseList
	m.listRetried = false
	m.listRV = m.relistRV()
	pageSize := int64(DefaultPageSize)
	switch {
	case m.pageSizeOverride != 0:
		pageSize = m.pageSizeOverride
	case m.paginatedResult:
	case m.listRV != "" && m.listRV != "0":
		pageSize = 0
	}
	m.listPageSize = pageSize
	return m.listAction(m.listRV)
}

func (m *Machine) listAction(rv string) Action {
	return Action{Kind: List, Options: metav1.ListOptions{ResourceVersion: rv}, PageSize: m.listPageSize}
}

func (m *Machine) relistRV() string {
	switch {
	case m.rvUnavailable:
		return ""
	case m.lastSyncRV == "":
		return "0"
	default:
		return m.lastSyncRV
	}
}

func (m *Machine) listDone(in ListDone) Action {
	if in.Err != nil {
		if Classify(in.Err).rvUnusable() && !m.listRetried {
			m.rvUnavailable = true
			m.listRetried = true
			return m.listAction(m.relistRV())
		}
		return Action{Kind: Return, Err: fmt.Errorf("failed to list %v: %w", m.cfg.TypeDescription, in.Err)}
	}
	if m.listRV == "0" && in.Paginated {
		m.paginatedResult = true
	}
	m.rvUnavailable = false
	m.phase = phaseReplaceList
	m.pendingRV = in.ResourceVersion
	return Action{Kind: Replace, ResourceVersion: in.ResourceVersion, Report: m.checkRV(in.ResourceVersion)}
}

func (m *Machine) replaced(in Replaced) Action {
	if in.Err != nil {
		if m.phase == phaseReplaceWatchList {
			a := m.list()
			a.Note = in.Err
			return a
		}
		return Action{Kind: Return, Err: in.Err}
	}
	reuse := m.phase == phaseReplaceWatchList
	if m.phase == phaseReplaceSupplied {
		m.rvUnavailable = false
	}
	m.lastSyncRV = m.pendingRV
	m.phase = phaseWatch
	if reuse {
		m.propagateRV = true
		return Action{Kind: Watch, Reuse: true, PropagateRV: true}
	}
	return m.watch()
}

func (m *Machine) watch() Action {
	m.phase = phaseWatch
	rv := m.lastSyncRV
	m.propagateRV = rv != "" && rv != "0"
	return Action{Kind: Watch, PropagateRV: m.propagateRV, Options: metav1.ListOptions{
		ResourceVersion:     rv,
		TimeoutSeconds:      m.watchTimeout(),
		AllowWatchBookmarks: true,
	}}
}

func (m *Machine) watchStartFailed(in WatchStartFailed) Action {
	if Classify(in.Err).retriable() {
		a := m.watch()
		a.Backoff = true
		return a
	}
	return Action{Kind: Return, Err: in.Err}
}

func (m *Machine) watchEnded(in WatchEnded) Action {
	class := Classify(in.Err)
	m.internalRetry.Record(class == ClassInternal, in.At)
	switch {
	case class == ClassNone:
		return m.watch()
	case class == ClassExpired:
		return Action{Kind: Return}
	case class == ClassTooManyRequests:
		a := m.watch()
		a.Backoff = true
		return a
	case class == ClassInternal && m.internalRetry.Allow(in.At):
		return m.watch()
	default:
		return Action{Kind: Return, Note: in.Err}
	}
}

// watchTimeout spreads watch timeouts over [min, max] so that watches
// opened together do not all expire together.
func (m *Machine) watchTimeout() *int64 {
	lo, hi := m.cfg.MinWatchTimeout.Seconds(), m.cfg.MaxWatchTimeout.Seconds()
	s := int64(lo + m.cfg.Rand()*(hi-lo))
	return &s
}
