package restartfsm

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openinformer/cache/internal/script"
	"github.com/openinformer/cache/internal/snapshot"
)

// TestScripts replays the scripts in testdata, one per rule of
// docs/RESTART.md (format: package internal/script; -rewrite regenerates
// them). Each command is an input and its output the action answered,
// with the state the machine is left in. "config timeout=DURATION" (no
// output) sets CatchUpTimeout before the first input; the default is 90s.
// "restart" (no output) starts the next inputs on a new machine.
//
// Inputs:
//
//	begin
//	loaded rv=RV | loaded missing | loaded err=mismatch|version|truncated|corrupt
//	probed rv=RV | probed err=CLASS
//	opened
//	watch-failed [err=CLASS]
//	event rv=RV
//	bookmark rv=RV
//	deadline
//
// CLASS is one of expired, gone, toolarge, 429, refused, internal, other.
func TestScripts(t *testing.T) {
	script.RunAll(t, "testdata/*.txt", runScript)
}

func runScript(t *testing.T, file string) {
	cfg := Config{CatchUpTimeout: 90 * time.Second}
	var m *Machine
	script.Run(t, file, func(cmd string) string {
		if v, ok := strings.CutPrefix(cmd, "config timeout="); ok {
			require.Nil(t, m, "%s: config after the first input", file)
			d, err := time.ParseDuration(v)
			require.NoError(t, err)
			cfg.CatchUpTimeout = d
			return ""
		}
		if cmd == "restart" {
			m = nil
			return ""
		}
		if m == nil {
			m = New(cfg)
		}
		return render(m.Step(parseInput(t, cmd))) + " -> " + m.State().String() + "\n"
	})
}

func parseInput(t *testing.T, line string) Input {
	fields := strings.Fields(line)
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	_, missing := args["missing"]
	switch fields[0] {
	case "begin":
		return Begin{}
	case "loaded":
		err := snapshotError(t, args["err"])
		if missing {
			err = &snapshot.Error{Reason: snapshot.MissingReason, Path: "/var/cache/pods.snap"}
		}
		return Loaded{ResourceVersion: args["rv"], Err: err, Missing: missing}
	case "probed":
		return Probed{ResourceVersion: args["rv"], Err: classError(t, args["err"])}
	case "opened":
		return WatchOpened{}
	case "watch-failed":
		return WatchFailed{Err: classError(t, args["err"])}
	case "event":
		return Event{ResourceVersion: args["rv"]}
	case "bookmark":
		return Bookmark{ResourceVersion: args["rv"]}
	case "deadline":
		return DeadlinePassed{}
	}
	t.Fatalf("unknown input %q", line)
	return nil
}

// snapshotError is the error internal/snapshot gives for a refused file.
func snapshotError(t *testing.T, reason string) error {
	e := &snapshot.Error{Path: "/var/cache/pods.snap"}
	switch reason {
	case "":
		return nil
	case "mismatch":
		e.Reason, e.Field, e.Got, e.Want = snapshot.MismatchReason, "label selector", "app=db", "app=web"
	case "version":
		e.Reason, e.Field, e.Got, e.Want = snapshot.FormatVersionReason, "format version", "2", "1"
	case "truncated":
		e.Reason, e.Detail = snapshot.TruncatedReason, "file ends early"
	case "corrupt":
		e.Reason, e.Detail = snapshot.CorruptReason, "checksum 0badcafe, computed 12345678"
	default:
		t.Fatalf("unknown snapshot error %q", reason)
	}
	return e
}

func classError(t *testing.T, class string) error {
	switch class {
	case "":
		return nil
	case "expired":
		return apierrors.NewResourceExpired("too old resource version: 5 (7)")
	case "gone":
		return apierrors.NewGone("gone")
	case "toolarge":
		return apierrors.NewTimeoutError("Too large resource version", 1)
	case "429":
		return apierrors.NewTooManyRequests("busy", 1)
	case "refused":
		return fmt.Errorf("dial: %w", syscall.ECONNREFUSED)
	case "internal":
		return apierrors.NewInternalError(errors.New("boom"))
	case "other":
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	}
	t.Fatalf("unknown error class %q", class)
	return nil
}

// render prints an action the way scripts spell it.
func render(a Action) string {
	var b strings.Builder
	if a.Backoff {
		b.WriteString("backoff, ")
	}
	b.WriteString([...]string{"?", "load", "probe", "watch", "apply", "sync", "fallback", "wait", "done"}[a.Kind])
	if a.ResourceVersion != "" {
		fmt.Fprintf(&b, " rv=%s", a.ResourceVersion)
	}
	if a.Timeout != 0 {
		fmt.Fprintf(&b, " timeout=%v", a.Timeout)
	}
	if a.ArmDeadline {
		b.WriteString(" arm-deadline")
	}
	if a.ApplyFirst {
		b.WriteString(" apply-first")
	}
	if a.Kind == Fallback {
		fmt.Fprintf(&b, " reason=%q", a.Reason.String())
		if a.Err != nil {
			fmt.Fprintf(&b, " err=%q", a.Err.Error())
		}
	}
	return b.String()
}
