package fake_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	oicache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
)

// openInformerTestInSync reports whether store holds exactly the server's objects and versions.
func openInformerTestInSync(store oicache.Store, srv *fake.Server) bool {
	want := map[string]string{}
	for _, obj := range srv.Objects() {
		p := obj.(*corev1.Pod)
		want[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	got := map[string]string{}
	for _, obj := range store.List() {
		p := obj.(*corev1.Pod)
		got[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	return fmt.Sprint(want) == fmt.Sprint(got)
}

// openinformer's reflector keeps a store in step with the fake through every kind of fault, in
// watch-list and in LIST mode. Its backoff is shortened so the faults cost milliseconds.
func TestOpenInformerReflectorAgainstFake(t *testing.T) {
	faults := []struct {
		name   string
		inject func(srv *fake.Server) (release func())
	}{
		{"close watches", func(srv *fake.Server) func() { srv.CloseWatches(); return func() {} }},
		{"close after one event", func(srv *fake.Server) func() { srv.CloseWatchesAfter(1); return func() {} }},
		{"410 mid-stream", func(srv *fake.Server) func() {
			srv.SendWatchError(fake.Expired("too old resource version"))
			return func() {}
		}},
		{"held, compacted, dropped", func(srv *fake.Server) func() {
			release := srv.HoldEvents()
			return func() { srv.Compact(); srv.CloseWatches(); release() }
		}},
		{"restart", func(srv *fake.Server) func() { srv.Restart(1000); return func() {} }},
		{"throttled and refused", func(srv *fake.Server) func() {
			srv.FailNextWatches(1, fake.TooManyRequests(0))
			srv.FailNextWatches(1, fake.ConnectionRefused())
			srv.FailNextLists(1, fake.InternalError("etcd leader changed"))
			srv.CloseWatches()
			return func() {}
		}},
	}
	for _, unsupported := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchListUnsupported=%v", unsupported), func(t *testing.T) {
			srv := fake.MustNew(fake.Options{Object: &corev1.Pod{}, WatchListUnsupported: unsupported,
				Objects: []runtime.Object{examplePod("seed")}})
			store := oicache.NewStore(oicache.DeletionHandlingMetaNamespaceKeyFunc)
			r := oicache.NewReflectorWithOptions(srv, &corev1.Pod{}, store, oicache.ReflectorOptions{
				Backoff: &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30, Cap: time.Millisecond},
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.RunWithContext(ctx)
			}()
			defer func() { cancel(); <-done }()
			inSync := func() bool { return openInformerTestInSync(store, srv) }
			require.Eventually(t, inSync, 10*time.Second, time.Millisecond)

			for i, f := range faults {
				release := f.inject(srv)
				_, err := srv.Create(examplePod(fmt.Sprintf("p%d", i)))
				require.NoError(t, err)
				_, err = srv.Delete("default", "seed")
				require.NoError(t, err)
				_, err = srv.Create(examplePod("seed"))
				require.NoError(t, err)
				release()
				require.Eventually(t, inSync, 10*time.Second, time.Millisecond, "after %q; requests %d", f.name, len(srv.Requests()))
			}
		})
	}
}
