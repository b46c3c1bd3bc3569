package restartfsm

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/openinformer/cache/internal/reflectorfsm"
)

// DefaultWatchTimeout is the server-side timeout of catch-up watches: the
// API server sends a bookmark 2 s before a watch's timeout, so a quiet
// resource is proved caught up about a second after the watch opens
// instead of after the minute of the periodic bookmark.
const DefaultWatchTimeout = 3 * time.Second

// Config is fixed for the lifetime of a Machine.
type Config struct {
	// WatchTimeout is the TimeoutSeconds of every catch-up watch; zero
	// means DefaultWatchTimeout. It must exceed the server's 2 s
	// pre-timeout bookmark lead.
	WatchTimeout time.Duration
	// CatchUpTimeout bounds the wait for the watch to reach the target,
	// counted from the first WATCH. A server that sends no bookmarks would
	// otherwise keep a quiet resource unsynced for ever. Zero waits for ever.
	CatchUpTimeout time.Duration
}

// Kind is what an Action asks the caller to do.
type Kind int

// The kinds of Action.
const (
	// Load reads the snapshot into a staged cache, invisible to handlers and
	// listers, and reports Loaded.
	Load Kind = iota + 1
	// Probe sends a LIST with resourceVersion "" (a consistent read) and
	// limit=1, and reports Probed with the list's resourceVersion.
	Probe
	// Watch opens a WATCH from Action.ResourceVersion with bookmarks
	// allowed and Action.Timeout as its TimeoutSeconds, and reports WatchOpened or WatchFailed; later, each event as
	// Event, each bookmark as Bookmark, the end as WatchFailed.
	Watch
	// Apply applies the event just reported to the staged cache: an added
	// or modified object is stored, a deleted one removed. Handlers are not
	// told.
	Apply
	// Sync hands the staged cache over as the result of a LIST at
	// Action.ResourceVersion (handlers get an add for each object, in the
	// initial list), after which the informer watches from that version
	// as after any LIST; the catch-up watch is closed. With
	// Action.ApplyFirst the event just reported is applied first.
	Sync
	// Fallback drops the staged cache, logs Action.Reason and Action.Err
	// once, and syncs as without a snapshot, listing with resourceVersion ""
	// (a consistent read), never "0": a stale server cache must not take
	// the informer back behind a version the snapshot held.
	Fallback
	// Wait asks for nothing: the next input will come by itself.
	Wait
	// Done answers inputs after the restart is over; they are stale.
	Done
)

// Reason says why a restart fell back.
type Reason int

// The reasons for Fallback.
const (
	// NoSnapshot: there was no snapshot file (a first start).
	NoSnapshot Reason = iota + 1
	// Unusable: the file was refused: another resource, scope, selector,
	// shard, encoding or format, truncated or corrupt (Action.Err says).
	Unusable
	// NotComparable: a resource version is not a decimal integer, so the
	// catch-up cannot be proved.
	NotComparable
	// TooLarge: the snapshot is newer than the server (restored etcd,
	// another cluster), or the server called the watch's version too large.
	TooLarge
	// Gone: the server no longer holds the snapshot's version (410).
	Gone
	// Failed: the probe or the watch failed in a way a retry does not mend.
	Failed
	// TimedOut: the watch did not reach the target within CatchUpTimeout.
	TimedOut
)

// String names the reason in the fallback's log line.
func (r Reason) String() string {
	switch r {
	case NoSnapshot:
		return "no snapshot"
	case Unusable:
		return "snapshot unusable"
	case NotComparable:
		return "resourceVersion not comparable"
	case TooLarge:
		return "snapshot newer than the server"
	case Gone:
		return "snapshot older than the server's watch window"
	case Failed:
		return "catch-up failed"
	case TimedOut:
		return "catch-up timed out"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Action is one instruction to the caller.
type Action struct {
	Kind Kind
	// Backoff asks the caller to wait one step of its backoff first.
	Backoff bool
	// ResourceVersion is where Watch starts and what Sync records.
	ResourceVersion string
	// Timeout is the server-side timeout of Watch.
	Timeout time.Duration
	// ArmDeadline asks the caller to report DeadlinePassed after
	// Config.CatchUpTimeout.
	ArmDeadline bool
	// ApplyFirst makes Sync apply the reported event before handing over.
	ApplyFirst bool
	// Reason and Err explain a Fallback.
	Reason Reason
	Err    error
}

// Input is the outcome of an Action, fed back with Step.
type Input interface{ input() }

// Begin starts a restart.
type Begin struct{}

// Loaded reports the snapshot's load: its resourceVersion, or the error
// that refused it. Missing says the error is the absence of a file.
type Loaded struct {
	ResourceVersion string
	Err             error
	Missing         bool
}

// Probed reports the consistent limit=1 LIST. Refused is set when the
// caller found the listed object at odds with the snapshot (another
// cluster, or a history rewritten): the snapshot is unusable.
type Probed struct {
	ResourceVersion string
	Err             error
	Refused         error
}

// WatchOpened reports that the WATCH request was accepted.
type WatchOpened struct{}

// WatchFailed reports a WATCH that could not be opened, an ERROR event, or
// the end of the stream (Err nil for a clean close).
type WatchFailed struct{ Err error }

// Event reports an ADDED, MODIFIED or DELETED event at ResourceVersion.
type Event struct{ ResourceVersion string }

// Bookmark reports a BOOKMARK at ResourceVersion.
type Bookmark struct{ ResourceVersion string }

// DeadlinePassed reports that CatchUpTimeout has passed since ArmDeadline.
type DeadlinePassed struct{}

func (Begin) input()          {}
func (Loaded) input()         {}
func (Probed) input()         {}
func (WatchOpened) input()    {}
func (WatchFailed) input()    {}
func (Event) input()          {}
func (Bookmark) input()       {}
func (DeadlinePassed) input() {}

// State is where a Machine is.
type State int

// The states (see the package documentation).
const (
	Idle State = iota
	Loading
	Probing
	Resuming
	CatchingUp
	Synced
	FellBack
)

// String names the state as the package documentation does.
func (s State) String() string {
	return [...]string{"idle", "loading", "probing", "resuming", "catching-up", "synced", "fallback"}[s]
}

// Machine is a restart's decision state. It is not safe for concurrent use.
type Machine struct {
	cfg   Config
	state State
	// snapshotRV is the snapshot's version, target the probe's, last the
	// version of the last event applied (where a new watch resumes).
	snapshotRV, target, last string
	armed                    bool
}

// New returns a Machine that has not begun.
func New(cfg Config) *Machine {
	if cfg.WatchTimeout <= 0 {
		cfg.WatchTimeout = DefaultWatchTimeout
	}
	return &Machine{cfg: cfg}
}

// State returns the machine's state.
func (m *Machine) State() State { return m.state }

// errUnexpected reports an input that cannot come in the current state: a
// bug of the caller, which the machine answers by falling back.
var errUnexpected = errors.New("restartfsm: unexpected input")

// Step feeds an outcome to the machine and returns what to do next.
func (m *Machine) Step(in Input) Action {
	if m.state == Synced || m.state == FellBack {
		return Action{Kind: Done}
	}
	switch in := in.(type) {
	case Begin:
		if m.state == Idle {
			m.state = Loading
			return Action{Kind: Load}
		}
	case Loaded:
		if m.state == Loading {
			return m.loaded(in)
		}
	case Probed:
		if m.state == Probing {
			return m.probed(in)
		}
	case WatchOpened:
		if m.state == Resuming {
			return m.opened()
		}
	case WatchFailed:
		if m.state == Resuming || m.state == CatchingUp {
			return m.watchFailed(in.Err)
		}
	case Event:
		if m.state == CatchingUp {
			return m.reached(in.ResourceVersion, true)
		}
	case Bookmark:
		if m.state == CatchingUp {
			return m.reached(in.ResourceVersion, false)
		}
	case DeadlinePassed:
		if m.armed {
			return m.fallback(TimedOut, fmt.Errorf("the watch did not reach resourceVersion %s within %v", m.target, m.cfg.CatchUpTimeout))
		}
		return Action{Kind: Wait}
	}
	return m.fallback(Failed, fmt.Errorf("%w %T in state %v", errUnexpected, in, m.state))
}

// loaded applies rules R1 (load) and R2 (comparable) to the snapshot.
func (m *Machine) loaded(in Loaded) Action {
	switch {
	case in.Missing:
		return m.fallback(NoSnapshot, in.Err)
	case in.Err != nil:
		return m.fallback(Unusable, in.Err)
	}
	if _, err := resourceversion.CompareResourceVersion(in.ResourceVersion, in.ResourceVersion); err != nil {
		return m.fallback(NotComparable, fmt.Errorf("snapshot: %w", err))
	}
	m.snapshotRV, m.last = in.ResourceVersion, in.ResourceVersion
	m.state = Probing
	return Action{Kind: Probe}
}

// probed applies rule R3 (target): the snapshot may not be newer than the
// server, and is already caught up if it is as new.
func (m *Machine) probed(in Probed) Action {
	if in.Refused != nil {
		return m.fallback(Unusable, in.Refused)
	}
	if in.Err != nil {
		if retriable(reflectorfsm.Classify(in.Err)) {
			return Action{Kind: Probe, Backoff: true}
		}
		return m.fallback(Failed, fmt.Errorf("probing the current resourceVersion: %w", in.Err))
	}
	cmp, err := resourceversion.CompareResourceVersion(m.snapshotRV, in.ResourceVersion)
	if err != nil {
		return m.fallback(NotComparable, fmt.Errorf("probe: %w", err))
	}
	if cmp > 0 {
		return m.fallback(TooLarge, fmt.Errorf("snapshot at resourceVersion %s, server at %s", m.snapshotRV, in.ResourceVersion))
	}
	m.target = in.ResourceVersion
	return m.watch(false)
}

// watch opens a watch from the last version applied, arming the deadline
// with the first.
func (m *Machine) watch(backoff bool) Action {
	m.state = Resuming
	a := Action{Kind: Watch, Backoff: backoff, ResourceVersion: m.last, Timeout: m.cfg.WatchTimeout,
		ArmDeadline: !m.armed && m.cfg.CatchUpTimeout > 0}
	m.armed = m.armed || a.ArmDeadline
	return a
}

// opened ends R3: a snapshot as new as the target needs no event. Both
// versions are well formed, so equal strings are equal versions.
func (m *Machine) opened() Action {
	m.state = CatchingUp
	if m.last == m.target {
		m.state = Synced
		return Action{Kind: Sync, ResourceVersion: m.last}
	}
	return Action{Kind: Wait}
}

// watchFailed applies rule R4 (resume): a watch that ends cleanly (its
// short timeout, most often) or on a retriable error is opened again from
// the last version applied; 410 and "too large" fall back, as does anything
// else, which the fresh sync will meet and report the way client-go does.
func (m *Machine) watchFailed(err error) Action {
	switch c := reflectorfsm.Classify(err); {
	case err == nil:
		return m.watch(false)
	case retriable(c):
		return m.watch(true)
	case c == reflectorfsm.ClassExpired:
		return m.fallback(Gone, err)
	case c == reflectorfsm.ClassTooLargeRV:
		return m.fallback(TooLarge, err)
	default:
		return m.fallback(Failed, fmt.Errorf("resumed watch: %w", err))
	}
}

// reached applies rule R5 (passed): the first event or bookmark at or past
// the target proves every change up to it has been applied, since a watch
// delivers in order.
func (m *Machine) reached(rv string, event bool) Action {
	cmp, err := resourceversion.CompareResourceVersion(rv, m.target)
	if err != nil {
		return m.fallback(NotComparable, fmt.Errorf("watch: %w", err))
	}
	if event {
		m.last = rv
	}
	if cmp >= 0 {
		m.state = Synced
		return Action{Kind: Sync, ResourceVersion: rv, ApplyFirst: event}
	}
	if event {
		return Action{Kind: Apply}
	}
	m.last = rv
	return Action{Kind: Wait}
}

func (m *Machine) fallback(r Reason, err error) Action {
	m.state = FellBack
	return Action{Kind: Fallback, Reason: r, Err: err}
}

// retriable is the reflector's rule for sending the same request again
// after a backoff: the server is shedding load or unreachable, and a fresh
// sync would only add load.
func retriable(c reflectorfsm.Class) bool {
	return c == reflectorfsm.ClassTooManyRequests || c == reflectorfsm.ClassConnectionRefused
}
