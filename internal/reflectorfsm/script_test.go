package reflectorfsm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openinformer/cache/internal/script"
)

// TestScripts replays the scripts in testdata (format: package
// internal/script; -rewrite regenerates them). Each command is an input to
// the machine and its output the action the machine answers with; a
// command "config watchlist" (no output) turns watch-list streaming on
// before the first input.
//
// Inputs:
//
//	begin [pagesize=N] [maxinternal=DURATION] [supplied=RV] [consistent]
//	list-done [rv=RV] [paginated] [err=CLASS]
//	watchlist-done [synced rv=RV] [err=CLASS] [quiet] [lasted=DURATION]
//	replaced [err=CLASS]
//	watch-start-failed err=CLASS
//	watch-ended [err=CLASS] [at=DURATION]
//	event rv=RV [past-adds]        (answered with "recorded" or "skipped")
//
// CLASS is one of expired, gone, toolarge, 429, refused, internal, other.
func TestScripts(t *testing.T) {
	script.RunAll(t, "testdata/*.txt", runScript)
}

func runScript(t *testing.T, file string) {
	var m *Machine
	start := time.Unix(1000, 0)
	script.Run(t, file, func(cmd string) string {
		if cmd == "config watchlist" {
			require.Nil(t, m, "%s: config after the first input", file)
			m = newTestMachine(true)
			return ""
		}
		if m == nil {
			m = newTestMachine(false)
		}
		return stepScript(t, m, cmd, start) + "\n"
	})
}

func stepScript(t *testing.T, m *Machine, line string, start time.Time) string {
	fields := strings.Fields(line)
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	has := func(k string) bool { _, ok := args[k]; return ok }
	errOf := func() error { return scriptError(t, args["err"]) }
	var in Input
	switch fields[0] {
	case "begin":
		b := Begin{}
		if v, ok := args["pagesize"]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			b.PageSize = n
		}
		if v, ok := args["maxinternal"]; ok {
			d, err := time.ParseDuration(v)
			require.NoError(t, err)
			b.MaxInternalErrorRetry = d
		}
		if v, ok := args["supplied"]; ok {
			b.Supplied, b.SuppliedResourceVersion = true, v
		}
		b.Consistent = has("consistent")
		in = b
	case "list-done":
		in = ListDone{Err: errOf(), ResourceVersion: args["rv"], Paginated: has("paginated")}
	case "watchlist-done":
		d := WatchListDone{Err: errOf(), Synced: has("synced"), ResourceVersion: args["rv"], Quiet: has("quiet")}
		if v, ok := args["lasted"]; ok {
			lasted, err := time.ParseDuration(v)
			require.NoError(t, err)
			d.Lasted = lasted
		}
		in = d
	case "replaced":
		in = Replaced{Err: errOf()}
	case "watch-start-failed":
		in = WatchStartFailed{Err: errOf()}
	case "watch-ended":
		at := start
		if v, ok := args["at"]; ok {
			d, err := time.ParseDuration(v)
			require.NoError(t, err)
			at = start.Add(d)
		}
		in = WatchEnded{Err: errOf(), At: at}
	case "event":
		if m.ObserveEvent(args["rv"], has("past-adds")) {
			return "recorded, last=" + m.LastSyncResourceVersion()
		}
		return "skipped, last=" + m.LastSyncResourceVersion()
	default:
		t.Fatalf("unknown input %q", line)
	}
	return renderAction(m.Step(in))
}

func scriptError(t *testing.T, class string) error {
	switch class {
	case "":
		return nil
	case "expired":
		return errExpired
	case "gone":
		return errGone
	case "toolarge":
		return errTooLarge
	case "429":
		return errTooMany
	case "refused":
		return errRefused
	case "internal":
		return errInternal
	case "other":
		return errForbidden
	case "boom":
		return errors.New("boom")
	}
	t.Fatalf("unknown error class %q", class)
	return nil
}

// renderAction prints an action the way scripts spell it.
func renderAction(a Action) string {
	var b strings.Builder
	if a.Backoff {
		b.WriteString("backoff, ")
	}
	o := a.Options
	switch a.Kind {
	case List:
		fmt.Fprintf(&b, "list rv=%s limit=%d", o.ResourceVersion, a.PageSize)
	case WatchList:
		fmt.Fprintf(&b, "watchlist rv=%s", o.ResourceVersion)
	case Replace:
		fmt.Fprintf(&b, "replace rv=%s", a.ResourceVersion)
	case Watch:
		if a.Reuse {
			b.WriteString("watch reuse")
		} else {
			fmt.Fprintf(&b, "watch rv=%s", o.ResourceVersion)
		}
		if a.PropagateRV {
			b.WriteString(" propagate")
		}
	case Return:
		b.WriteString("return")
		if a.Err != nil {
			fmt.Fprintf(&b, " err=%q", a.Err.Error())
		}
	}
	if a.Note != nil {
		fmt.Fprintf(&b, " note=%q", a.Note.Error())
	}
	if a.Report != nil {
		fmt.Fprintf(&b, " report=%q", a.Report.Error())
	}
	return b.String()
}
