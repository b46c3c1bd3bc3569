package cache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	v1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// panicTestInformer is what the handler-panic tests need of either
// implementation's informer.
type panicTestInformer interface {
	AddEventHandlerWithOptions(ResourceEventHandler, HandlerOptions) (ResourceEventHandlerRegistration, error)
	RunWithContext(context.Context)
}

// newPanicTestInformer builds client-go's informer or ours over lw.
func newPanicTestInformer(impl string, lw ListerWatcher) panicTestInformer {
	if impl == "client-go" {
		return clientcache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, clientcache.Indexers{})
	}
	return NewSharedIndexInformer(lw, &v1.Pod{}, 0, nil)
}

// panickingAdds records every add and panics on pod "a", always from the
// same line, so both implementations must report the same location.
type panickingAdds struct {
	mu   sync.Mutex
	seen []string
}

func (h *panickingAdds) OnAdd(obj interface{}, _ bool) {
	name := obj.(*v1.Pod).Name
	h.mu.Lock()
	h.seen = append(h.seen, name)
	h.mu.Unlock()
	if name == "a" {
		panic("handler bug on " + name)
	}
}

func (h *panickingAdds) OnUpdate(_, _ interface{}) {}
func (h *panickingAdds) OnDelete(interface{})      {}

func (h *panickingAdds) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

// panicObservation is what a panicking handler leaves behind: the first
// line of each log entry (time and pid removed, the stack cut off), the
// values PanicHandlers received, the handler calls and the registration's
// sync state.
type panicObservation struct {
	logLines      []string
	panicValues   []interface{}
	calls         []string
	handlerSynced bool
}

// logHeader is a klog header's time and thread id, which differ per run.
var logHeader = regexp.MustCompile(`^([IEW])\d{4} [0-9:.]+ +\d+ `)

// firstLogLines reduces klog text output to each entry's first line
// without its header and without the stack trace.
func firstLogLines(out string) []string {
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		if !logHeader.MatchString(line) {
			continue
		}
		line = logHeader.ReplaceAllString(line, "$1 ")
		line, _, _ = strings.Cut(line, " stacktrace=")
		lines = append(lines, line)
	}
	return lines
}

// setReallyCrash sets utilruntime.ReallyCrash for the test and restores it.
func setReallyCrash(t *testing.T, v bool) {
	old := utilruntime.ReallyCrash
	utilruntime.ReallyCrash = v
	t.Cleanup(func() { utilruntime.ReallyCrash = old })
}

// observePanics runs impl's informer over pods a and b with a handler
// panicking on a, with ReallyCrash false, inside a synctest bubble (client-
// go pauses a second after a panic).
func observePanics(t *testing.T, impl string) panicObservation {
	setReallyCrash(t, false)
	var obs panicObservation
	var mu sync.Mutex
	saved := utilruntime.PanicHandlers
	utilruntime.PanicHandlers = append(slices.Clone(saved), func(_ context.Context, r interface{}) {
		mu.Lock()
		obs.panicValues = append(obs.panicValues, r)
		mu.Unlock()
	})
	defer func() { utilruntime.PanicHandlers = saved }()
	var out bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&syncWriter{w: &out})))
		_, lw := informerTestServer("a", "b")
		inf := newPanicTestInformer(impl, lw)
		h := &panickingAdds{}
		reg, err := inf.AddEventHandlerWithOptions(h, HandlerOptions{Logger: &logger})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		for len(h.got()) < 2 {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(5 * time.Second) // client-go's registration syncs within its 100ms poll, if ever
		synctest.Wait()
		obs.calls, obs.handlerSynced = h.got(), reg.HasSynced()
		cancel()
		<-done
	})
	obs.logLines = firstLogLines(out.String())
	return obs
}

// syncWriter serializes writes to a buffer shared by goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestHandlerPanicDiff_RecoveredMatchesClientGo: with ReallyCrash false,
// both log the same "Observed a panic" line (with the registration's
// logger, at the handler's panic location), pass the same value to
// PanicHandlers and go on with the next notification. Ours also reports
// the registration synced (client-go's never syncs after a panicking
// initial add: a listed difference).
func TestHandlerPanicDiff_RecoveredMatchesClientGo(t *testing.T) {
	want := observePanics(t, "client-go")
	got := observePanics(t, "ours")
	require.NotEmpty(t, want.logLines)
	assert.Contains(t, want.logLines[0], `handler_panic_diff_test.go:`, "client-go logs at the panic's location")
	assert.Contains(t, want.logLines[0], `"Observed a panic" panic="handler bug on a"`)
	assert.Equal(t, want.logLines, got.logLines, "log output")
	assert.Equal(t, []interface{}{"handler bug on a"}, want.panicValues)
	assert.Equal(t, want.panicValues, got.panicValues, "PanicHandlers calls")
	assert.Equal(t, []string{"a", "b"}, want.calls)
	assert.Equal(t, want.calls, got.calls, "delivery continues with the next notification")
	assert.False(t, want.handlerSynced, "client-go: a panicking initial add keeps the registration unsynced")
	assert.True(t, got.handlerSynced, "ours: it counts as delivered")
	goleak.VerifyNone(t)
}

// panicChildEnv names the implementation a re-executed test binary runs
// with a panicking handler, under the default ReallyCrash.
const panicChildEnv = "OPENINFORMER_HANDLER_PANIC_CHILD"

// TestHandlerPanicDiff_CrashesProcessByDefault re-runs the test binary
// with a panicking handler and the default ReallyCrash=true: the process
// must die of the handler's panic after logging it, as client-go's does.
func TestHandlerPanicDiff_CrashesProcessByDefault(t *testing.T) {
	if impl := os.Getenv(panicChildEnv); impl != "" {
		runPanickingInformerChild(impl)
		return
	}
	impls := []string{"client-go", "ours"}
	results := make([]chan panicChildResult, len(impls))
	for i, impl := range impls { // both children at once: each is a second or so of setup
		results[i] = make(chan panicChildResult, 1)
		go func() { results[i] <- runPanicChild(impl) }()
	}
	outputs := map[string][]string{}
	for i, impl := range impls {
		r := <-results[i]
		var exit *exec.ExitError
		require.ErrorAs(t, r.err, &exit, "%s: the process must crash; output:\n%s", impl, r.out)
		assert.Equal(t, 2, exit.ExitCode(), "%s: exit status of an unrecovered panic", impl)
		assert.Contains(t, r.out, "panic: handler bug on a", impl)
		assert.NotContains(t, r.out, "child survived", impl)
		outputs[impl] = panicLines(firstLogLines(r.out))
	}
	require.NotEmpty(t, outputs["client-go"])
	assert.Equal(t, outputs["client-go"], outputs["ours"], "Observed a panic lines")
}

type panicChildResult struct {
	out string
	err error
}

// runPanicChild re-runs this test binary as a child running impl.
func runPanicChild(impl string) panicChildResult {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHandlerPanicDiff_CrashesProcessByDefault$", "-test.count=1")
	cmd.Env = append(os.Environ(), panicChildEnv+"="+impl)
	out, err := cmd.CombinedOutput()
	return panicChildResult{string(out), err}
}

// panicLines keeps the "Observed a panic" entries.
func panicLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, "Observed a panic") {
			out = append(out, l)
		}
	}
	return out
}

// runPanickingInformerChild runs impl's informer with the panicking
// handler and the process's default logger; it returns (and the parent
// fails) only if the panic did not end the process.
func runPanickingInformerChild(impl string) {
	_, lw := informerTestServer("a", "b")
	inf := newPanicTestInformer(impl, lw)
	h := &panickingAdds{}
	if _, err := inf.AddEventHandlerWithOptions(h, HandlerOptions{}); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inf.RunWithContext(ctx)
	klog.Flush()
	fmt.Println("child survived")
}
