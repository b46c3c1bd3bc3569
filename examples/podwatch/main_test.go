package main

import (
	"bytes"
	"context"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
)

// TestMain makes apimachinery's error reporting safe for the synctest bubble
// below (see fake.PrepareForSynctest).
func TestMain(m *testing.M) {
	fake.PrepareForSynctest()
	os.Exit(m.Run())
}

// TestPodwatchOnFakeServer runs the demo briefly and checks what its summary
// promises: the cache converged to the fake server, per-key order held, and
// the forced 410 led to exactly one relist.
func TestPodwatchOnFakeServer(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out bytes.Buffer
	cfg := config{duration: 3 * time.Second, objects: 200, workers: 2, progress: time.Second}

	// In a bubble the three seconds of churn, and the Reflector's pause
	// before the relist, pass on the fake clock: the work is the same, the
	// idle waits between churn ticks take no real time.
	synctest.Test(t, func(t *testing.T) {
		require.NoError(t, run(context.Background(), cfg, &out), out.String())
	})

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

func TestPodwatchRejectsNegativeDuration(t *testing.T) {
	err := run(context.Background(), config{duration: -time.Second, objects: 1, workers: 1, progress: time.Second}, &bytes.Buffer{})
	assert.ErrorContains(t, err, "--duration not negative")
}

// Against a server that refuses every connection, the wait for the first
// sync says what is going on instead of staying silent.
func TestWaitForSyncReportsProgressAndLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &corev1.Pod{}})
		srv.FailNextWatches(1000, fake.ConnectionRefused())
		srv.FailNextLists(1000, fake.ConnectionRefused())
		lw := &countingListerWatcher{inner: srv}
		informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); informer.RunWithContext(ctx) }()
		defer func() { cancel(); <-done }()

		var out bytes.Buffer
		assert.False(t, waitForSync(ctx, 2*time.Second, &out, time.Now(), informer, lw))
		assert.Equal(t, "   2.0s waiting for the first sync: 0 pods so far; last error: Get \"https://127.0.0.1:6443/api\": dial tcp: connect: connection refused\n"+
			"   4.0s waiting for the first sync: 0 pods so far; last error: Get \"https://127.0.0.1:6443/api\": dial tcp: connect: connection refused\n",
			out.String())
	})
}
