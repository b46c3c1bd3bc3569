package cache

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// waitTestChecker is done after delay (never if negative). Its channel is
// made on first use, so it can be built outside a synctest bubble.
type waitTestChecker struct {
	name  string
	delay time.Duration
	done  chan struct{}
}

func (c *waitTestChecker) Name() string { return c.name }
func (c *waitTestChecker) Done() <-chan struct{} {
	if c.done == nil {
		c.done = make(chan struct{})
		switch {
		case c.delay == 0:
			close(c.done)
		case c.delay > 0:
			time.AfterFunc(c.delay, func() { close(c.done) })
		}
	}
	return c.done
}

func TestH4_WaitForReportsCompletionAndTimeouts(t *testing.T) {
	checkers := func() []DoneChecker {
		return []DoneChecker{&waitTestChecker{name: "first", delay: 10 * time.Second}, &waitTestChecker{name: "second", delay: -1}, &waitTestChecker{name: "last"}}
	}
	for name, tc := range map[string]struct {
		checkers []DoneChecker
		timeout  time.Duration
		cause    string
		want     bool
		lines    []string
	}{
		"none":     {want: true, lines: []string{`"Waiting" for="caches"`}},
		"all-done": {checkers: []DoneChecker{&waitTestChecker{name: "a", delay: 5 * time.Second}, &waitTestChecker{name: "b"}}, want: true, lines: []string{`00:00:00.000000 .*"Waiting" for="caches"`, `00:00:00.000000 .*"Done waiting" for="caches" instance="b"`, `00:00:05.000000 .*"Done waiting" for="caches" instance="a"`}},
		"timeout": {checkers: checkers(), timeout: time.Minute, lines: []string{`"Waiting"`, `instance="last"`, `00:00:10.000000 .*instance="first"`,
			`00:01:00.000000 .*"Timed out waiting" for="caches" cause="context deadline exceeded" instances=\["second"\]`}},
		"cause": {checkers: checkers(), timeout: 5 * time.Second, cause: "go fish", lines: []string{`"Waiting"`, `instance="last"`,
			`00:00:05.000000 .*"Timed out waiting" for="caches" cause="go fish" instances=\["first","second"\]`}},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var out bytes.Buffer
				ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&out))))
				if tc.timeout > 0 {
					c, cancel := context.WithTimeoutCause(ctx, tc.timeout, errors.New(tc.cause))
					if tc.cause == "" {
						c, cancel = context.WithTimeout(ctx, tc.timeout)
					}
					defer cancel()
					ctx = c
				}
				assert.Equal(t, tc.want, WaitFor(ctx, "caches", tc.checkers...))
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				if assert.Len(t, lines, len(tc.lines), out.String()) {
					for i, re := range tc.lines {
						assert.Regexp(t, re, lines[i])
						assert.Contains(t, lines[i], "wait_test.go", "logged at the caller")
					}
				}
			})
		})
	}
	goleak.VerifyNone(t)
}

func TestH4_WaitForQuietWithoutWhatAndAlreadyCancelled(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&out)))))
	cancel()
	assert.True(t, WaitFor(ctx, "", &waitTestChecker{name: "done"}), "finished checker counts even after cancel")
	assert.False(t, WaitFor(ctx, "", &waitTestChecker{name: "never", delay: -1}))
	assert.Empty(t, out.String())
	assert.True(t, IsDone(&waitTestChecker{}))
	assert.False(t, IsDone(&waitTestChecker{delay: -1}))
	goleak.VerifyNone(t)
}

func TestH3_WaitForCacheSyncPollsEvery100ms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var calls atomic.Int32
		syncedAfter := func(d time.Duration) InformerSynced {
			return func() bool { calls.Add(1); return time.Since(start) >= d }
		}
		assert.True(t, WaitForCacheSync(nil, syncedAfter(0)))
		assert.Equal(t, int32(1), calls.Load(), "checked immediately")

		assert.True(t, WaitForCacheSync(nil, syncedAfter(250*time.Millisecond), syncedAfter(0)))
		assert.Equal(t, 300*time.Millisecond, time.Since(start), "next poll after 250ms is at 300ms")

		stop := make(chan struct{})
		close(stop)
		assert.True(t, WaitForCacheSync(stop, syncedAfter(0)), "synced at the first check wins over stop")
		assert.False(t, WaitForCacheSync(stop, syncedAfter(time.Hour)))

		calls.Store(0)
		never := func() bool { calls.Add(1); return false }
		stop2 := make(chan struct{})
		time.AfterFunc(950*time.Millisecond, func() { close(stop2) })
		assert.False(t, WaitForNamedCacheSync("ctrl", stop2, never, syncedAfter(0)))
		assert.Equal(t, int32(10), calls.Load(), "short-circuits per round; polls at 0,100..900ms")

		assert.True(t, WaitForNamedCacheSync("ctrl", nil, syncedAfter(0)))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		assert.False(t, WaitForNamedCacheSyncWithContext(ctx, never))
		assert.True(t, WaitForNamedCacheSyncWithContext(context.Background(), syncedAfter(0)))
	})
	goleak.VerifyNone(t)
}

func TestH5_SyncResultAsError(t *testing.T) {
	assert.NoError(t, SyncResult{Synced: map[reflect.Type]bool{reflect.TypeOf(""): false}}.AsError())
	cause := errors.New("ctx gone")
	err := SyncResult{Err: cause, Synced: map[reflect.Type]bool{
		reflect.TypeOf(0): false, reflect.TypeOf(""): true, reflect.TypeOf(1.5): false,
	}}.AsError()
	assert.EqualError(t, err, "failed to sync all caches: float64, int: ctx gone")
	assert.ErrorIs(t, err, cause)
}
