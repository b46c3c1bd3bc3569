package cache

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	clientcache "k8s.io/client-go/tools/cache"
)

// waitDiffCase is one WaitFor situation: checkers done after their delays
// (never when negative, at once when zero) and a context that ends after
// timeout (already ended when negative).
type waitDiffCase struct {
	delays  map[string]time.Duration
	timeout time.Duration
}

func (c waitDiffCase) checkers() []DoneChecker {
	names := make([]string, 0, len(c.delays))
	for name := range c.delays {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]DoneChecker, len(names))
	for i, name := range names {
		out[i] = &waitTestChecker{name: name, delay: c.delays[name]}
	}
	return out
}

func (c waitDiffCase) context(parent context.Context) (context.Context, context.CancelFunc) {
	if c.timeout < 0 {
		ctx, cancel := context.WithCancel(parent)
		cancel()
		return ctx, cancel
	}
	return context.WithTimeout(parent, c.timeout)
}

// runLogged runs f in a synctest bubble with a text logger in its context
// and returns f's result and the log lines, with the lines that report
// completions at the same instant (whose order client-go leaves to the
// scheduler) sorted.
func runLogged(t *testing.T, f func(ctx context.Context) bool) (bool, []string) {
	var ok bool
	var out bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&out))))
		ok = f(ctx)
	})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && strings.Contains(lines[j], `"Done waiting"`) {
			j++
		}
		slices.Sort(lines[i:j])
		i = max(j, i+1)
	}
	return ok, lines
}

// TestWaitForLogsMatchClientGo calls both WaitFor implementations from the
// same line, so that even the caller location in each log line must agree.
func TestWaitForLogsMatchClientGo(t *testing.T) {
	for name, tc := range map[string]waitDiffCase{
		"some finish, then timeout":       {delays: map[string]time.Duration{"a": time.Second, "b": 2 * time.Second, "c": -1}, timeout: 5 * time.Second},
		"finished before a cancelled ctx": {delays: map[string]time.Duration{"a": 0, "b": 0, "c": -1, "d": -1}, timeout: -1},
		"all finished, ctx cancelled":     {delays: map[string]time.Duration{"a": 0, "b": 0, "c": 0}, timeout: -1},
		"finish just before the deadline": {delays: map[string]time.Duration{"a": 2 * time.Second, "b": 2 * time.Second, "c": -1}, timeout: 3 * time.Second},
		"all finish in time":              {delays: map[string]time.Duration{"a": time.Second, "b": 0}, timeout: time.Minute},
		"nothing to wait for":             {timeout: -1},
	} {
		t.Run(name, func(t *testing.T) {
			var results [2]bool
			var logs [2][]string
			for i, waitFor := range []func(context.Context, string, ...DoneChecker) bool{clientcache.WaitFor, WaitFor} {
				results[i], logs[i] = runLogged(t, func(ctx context.Context) bool {
					ctx, cancel := tc.context(ctx)
					defer cancel()
					return waitFor(ctx, "caches", tc.checkers()...)
				})
			}
			assert.Equal(t, results[0], results[1], "result")
			assert.Equal(t, logs[0], logs[1], "log lines")
		})
	}
}

// waitLogSource is the part of a klog text line that names the source file,
// which differs between the two packages' own log calls.
var waitLogSource = regexp.MustCompile(`^(\S+ \S+ +\d+) [^ \]]+\] `)

// TestWaitForNamedCacheSyncLogsMatchClientGo compares the log lines of the
// polling waits, minus the source location of the library's own calls.
func TestWaitForNamedCacheSyncLogsMatchClientGo(t *testing.T) {
	for name, tc := range map[string]waitDiffCase{
		"synced later": {delays: map[string]time.Duration{"a": 950 * time.Millisecond, "b": 0}, timeout: time.Minute},
		"timed out":    {delays: map[string]time.Duration{"a": 950 * time.Millisecond, "b": -1}, timeout: 5050 * time.Millisecond},
		"cancelled":    {delays: map[string]time.Duration{"a": 0}, timeout: -1},
	} {
		t.Run(name, func(t *testing.T) {
			var results [2]bool
			var logs [2][]string
			for i, wait := range []func(context.Context, ...InformerSynced) bool{clientcache.WaitForNamedCacheSyncWithContext, WaitForNamedCacheSyncWithContext} {
				results[i], logs[i] = runLogged(t, func(ctx context.Context) bool {
					ctx, cancel := tc.context(ctx)
					defer cancel()
					var synced []InformerSynced
					for _, c := range tc.checkers() {
						synced = append(synced, func() bool { return IsDone(c) })
					}
					return wait(ctx, synced...)
				})
				for j, line := range logs[i] {
					logs[i][j] = waitLogSource.ReplaceAllString(line, "$1 ")
				}
			}
			assert.Equal(t, results[0], results[1], "result")
			assert.Equal(t, logs[0], logs[1], "log lines")
		})
	}
}
