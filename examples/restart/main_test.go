package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/openinformer/cache/fake"
)

// TestMain makes apimachinery's error reporting safe for the synctest
// bubbles below (see fake.PrepareForSynctest).
func TestMain(m *testing.M) {
	fake.PrepareForSynctest()
	os.Exit(m.Run())
}

// runDemo runs the demo in a bubble, whose fake clock lets a catch-up's
// wait for a bookmark pass at once, and returns its output.
func runDemo(t *testing.T, cfg config) string {
	t.Helper()
	var out bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		require.NoError(t, run(context.Background(), cfg, &out), out.String())
	})
	return out.String()
}

// The demo prints every start side by side, and the warm start's handler
// sees exactly client-go's cold initial list, round after round.
func TestRestartDemo(t *testing.T) {
	defer goleak.VerifyNone(t)
	out := runDemo(t, config{pods: 300, rounds: 2, dir: t.TempDir()})
	for _, want := range []string{"client-go cold", "ours cold", "ours warm", "time to informer HasSynced", "time to handler HasSynced", "until informer HasSynced", "full lists", "probes (limit=1)", "bytes read", "peak heap", "round 2"} {
		assert.Contains(t, out, want)
	}
	// Every round's cold start is cold: both rounds' warm starts are the
	// only ones without a full sync.
	assert.Equal(t, 2, strings.Count(out, "warm restart used: no full LIST or watch-list;"), out)
	assert.Len(t, regexp.MustCompile(`watch-lists, initial watches +1 +1 +0 +0\n`).FindAllString(out, -1), 2, out)
	assert.Contains(t, out, "warm restart used: no full LIST or watch-list;")
	assert.Contains(t, out, "handlers: the ours warm start's saw exactly client-go's cold initial list (300 adds,")
	// The restart's parts as built resume without a full sync, and hand
	// the handler a fresh sync's initial list.
	assert.Contains(t, out, "components: 0 full syncs;")
	assert.Contains(t, out, "handlers: the warm, components start's saw exactly client-go's cold initial list (300 adds,")
}

// With the watch window emptied while the informer is down, the restart
// falls back, and its handler still sees a fresh sync's initial list.
func TestRestartDemoFallsBackWhenTheWindowIsGone(t *testing.T) {
	defer goleak.VerifyNone(t)
	out := runDemo(t, config{pods: 300, rounds: 1, compactHistory: true, dir: t.TempDir()})
	assert.Contains(t, out, "warm restart not used: 1 full syncs")
	assert.Contains(t, out, "components: fell back (snapshot older than the server's watch window)")
	assert.Contains(t, out, "handlers: the ours warm start's saw exactly client-go's cold initial list (300 adds,")
}

func TestRestartDemoRejectsBadFlags(t *testing.T) {
	require.Error(t, run(context.Background(), config{pods: 0, rounds: 1}, &bytes.Buffer{}))
	require.Error(t, run(context.Background(), config{pods: 1, rounds: 0}, &bytes.Buffer{}))
}
