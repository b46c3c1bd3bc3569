package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestPodwatchOnFakeServer runs the demo briefly and checks what its summary
// promises: the cache converged to the fake server, per-key order held, and
// the forced 410 led to exactly one relist.
func TestPodwatchOnFakeServer(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out bytes.Buffer
	cfg := config{duration: 3 * time.Second, objects: 200, workers: 2, progress: time.Second}

	require.NoError(t, run(context.Background(), cfg, &out), out.String())

	summary := out.String()
	assert.Contains(t, summary, "cache matches the fake server exactly")
	assert.Contains(t, summary, "out of order    0 per-key")
	assert.Contains(t, summary, "relists         1 ")
	assert.Contains(t, summary, "fault: dropping 1 watch connection(s)")
}

func TestPodwatchRejectsBadFlags(t *testing.T) {
	err := run(context.Background(), config{objects: 0, workers: 1, progress: time.Second}, &bytes.Buffer{})
	assert.Error(t, err)
}
