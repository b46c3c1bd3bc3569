package cache_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
)

// transformCalls runs an informer (ours or client-go's) on server until it
// has synced and returns how many times its transform ran per object.
func transformCalls(t *testing.T, informer clientcache.SharedIndexInformer, objects int) float64 {
	var calls atomic.Int64
	require.NoError(t, informer.SetTransform(func(in any) (any, error) {
		if _, ok := in.(*corev1.Pod); ok {
			calls.Add(1)
		}
		return in, nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	require.True(t, clientcache.WaitForCacheSync(ctx.Done(), informer.HasSynced))
	require.Len(t, informer.GetStore().List(), objects)
	return float64(calls.Load()) / float64(objects)
}

func verbs(server *fake.Server) []string {
	var out []string
	for _, r := range server.Requests() {
		out = append(out, r.Verb)
	}
	return out
}

// An informer's initial sync transforms each object once, by watch-list
// (client-go: twice, once into the Reflector's temporary store and again in
// the queue's Replace) and by LIST (the initial LIST asks for
// resourceVersion 0, which the server answers in one page).
func TestTransformRunsOncePerObjectOnInitialSync(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 50
	for name, opts := range map[string]fake.Options{
		"watch-list": {},
		"LIST":       {WatchListUnsupported: true},
	} {
		t.Run(name, func(t *testing.T) {
			opts.Object = &corev1.Pod{}
			opts.Objects = fixtures.Objects(fixtures.Pods(3, n))
			ours := fake.MustNew(opts)
			got := transformCalls(t, cache.NewSharedIndexInformer(ours, &corev1.Pod{}, 0, cache.Indexers{}), n)
			theirs := fake.MustNew(opts)
			want := transformCalls(t, clientcache.NewSharedIndexInformer(theirs, &corev1.Pod{}, 0, clientcache.Indexers{}), n)
			t.Logf("%s: transform calls per object: ours %.2f, client-go %.2f; requests %v", name, got, want, verbs(ours))
			assert.Equal(t, 1.0, got)
			assert.Equal(t, verbs(theirs), verbs(ours), "the same requests as client-go")
			if name == "watch-list" {
				assert.NotContains(t, verbs(ours), fake.VerbList, "synced by watch-list")
				assert.Equal(t, 2.0, want, "client-go transforms twice, which this test exists to beat")
			}
		})
	}
}
