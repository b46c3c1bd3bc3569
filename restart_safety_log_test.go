package cache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/snapshot"
)

// secretMarker is what every Secret's data holds: no log line may show it.
const secretMarker = "M4RK3R-0f-5ecret-data"

// allLogs collects every line logged, by the informer's logger and by
// klog's global one, at every verbosity.
type allLogs struct {
	mu    sync.Mutex
	lines []string
}

func (l *allLogs) logger() klog.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
}

// capture sends klog's global logger to l until the test ends, and has
// utilruntime.HandleError log as it does by default, without its error
// backoff: it sleeps by a clock shared with tests outside the bubble.
func (l *allLogs) capture(t *testing.T) {
	klog.SetLogger(l.logger())
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(ctx context.Context, err error, msg string, kv ...any) {
		klog.FromContext(ctx).Error(err, msg, kv...)
	}}
	t.Cleanup(func() {
		utilruntime.ErrorHandlers = saved
		klog.ClearLogger()
	})
}

func (l *allLogs) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

func markedSecret(name, v string) *v1.Secret {
	return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"v": v}},
		Data: map[string][]byte{"token": []byte(secretMarker + "-" + v)}}
}

// secretRun runs an informer of Secrets over lw with opts until stop,
// logging to logs, and waits for it to sync.
func secretRun(t *testing.T, lw ListerWatcher, opts SharedIndexInformerOptions, logs *allLogs, setup func(SharedIndexInformer)) (SharedIndexInformer, func()) {
	inf := NewSharedIndexInformerWithOptions(lw, &v1.Secret{}, opts)
	if setup != nil {
		setup(inf)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logs.logger()))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced))
	synctest.Wait()
	return inf, func() { cancel(); <-done }
}

// probeLW passes a warm start's probe (a LIST with limit 1) through
// probe, the rest to lw as it is.
type probeLW struct {
	*fake.Server
	probe func(runtime.Object, error) (runtime.Object, error)
}

func (p probeLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := p.Server.ListWithContext(ctx, o)
	if o.Limit == 1 {
		return p.probe(obj, err)
	}
	return obj, err
}

func (p probeLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return p.ListWithContext(context.Background(), o)
}

// secretCase is one way a restart goes wrong; want is a text the logs
// must hold, proof that the path was taken.
type secretCase struct {
	name, want  string
	compactOnly bool
	// down changes the world while the informer is down and returns what
	// the next start lists from.
	down func(t *testing.T, srv *fake.Server, path string, opts *SharedIndexInformerOptions) ListerWatcher
	// setup, when set, adjusts the restarted informer before it runs.
	setup func(SharedIndexInformer)
}

// spoilFile rewrites path's bytes with damage.
func spoilFile(t *testing.T, path string, damage func([]byte) []byte) {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, damage(b), 0o600))
}

// rewriteSnapshot writes path anew with its own header and one record
// under key whose value is value.
func rewriteSnapshot(t *testing.T, path, key string, value []byte) {
	r, err := snapshot.Open(path, nil)
	require.NoError(t, err)
	h := r.Header()
	require.NoError(t, r.Close())
	h.Count = 1
	w, err := snapshot.Create(path, h)
	require.NoError(t, err)
	require.NoError(t, w.Add(key, value))
	require.NoError(t, w.Commit())
}

func secretCases() []secretCase {
	same := func(srv *fake.Server) ListerWatcher { return srv }
	return []secretCase{
		{name: "no snapshot", want: "no snapshot", down: func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) ListerWatcher {
			require.NoError(t, os.Remove(path))
			return srv
		}},
		{name: "record key length shifted", want: "snapshot unusable", down: func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) ListerWatcher {
			spoilFile(t, path, func(b []byte) []byte {
				i := bytes.Index(b, []byte("ns/s0"))
				require.Positive(t, i)
				b[i-1] = 0x7f // the key now runs into the record's data
				return b
			})
			return srv
		}},
		{name: "record does not decode", want: "does not decode", down: func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) ListerWatcher {
			rewriteSnapshot(t, path, "ns/s0", append([]byte{0, 0xff}, secretMarker...))
			return srv
		}},
		{name: "truncated", want: "truncated", down: func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) ListerWatcher {
			spoilFile(t, path, func(b []byte) []byte { return b[:len(b)/2] })
			return srv
		}},
		{name: "not a snapshot", want: "not a snapshot", down: func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) ListerWatcher {
			spoilFile(t, path, func([]byte) []byte { return []byte(strings.Repeat(secretMarker, 100)) })
			return srv
		}},
		{name: "format version", want: "another format version", down: func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) ListerWatcher {
			spoilFile(t, path, func(b []byte) []byte { b[8] = 9; return b })
			return srv
		}},
		{name: "another Version", want: "another scope", down: func(_ *testing.T, srv *fake.Server, _ string, opts *SharedIndexInformerOptions) ListerWatcher {
			opts.Snapshot.Version = "2"
			return srv
		}},
		{name: "another ClusterID", want: "cluster", down: func(_ *testing.T, srv *fake.Server, _ string, opts *SharedIndexInformerOptions) ListerWatcher {
			opts.Snapshot.ClusterID = "c2"
			return srv
		}},
		{name: "not a file of ours", want: "not a file of ours", down: func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) ListerWatcher {
			require.NoError(t, os.Chmod(path, 0o644))
			return srv
		}},
		{name: "another cluster", want: "another cluster", down: func(t *testing.T, _ *fake.Server, _ string, _ *SharedIndexInformerOptions) ListerWatcher {
			other := fake.MustNew(fake.Options{Object: &v1.Secret{}})
			for _, n := range []string{"a", "b", "c", "d", "e"} {
				must(t)(other.Create(markedSecret(n, "9")))
			}
			return other
		}},
		{name: "newer than the server", want: "snapshot newer than the server", down: func(t *testing.T, _ *fake.Server, _ string, _ *SharedIndexInformerOptions) ListerWatcher {
			other := fake.MustNew(fake.Options{Object: &v1.Secret{}})
			must(t)(other.Create(markedSecret("z", "9")))
			return other
		}},
		{name: "410", want: "watch window", down: func(_ *testing.T, srv *fake.Server, _ string, _ *SharedIndexInformerOptions) ListerWatcher {
			srv.Compact()
			return srv
		}},
		{name: "timed out", want: "catch-up timed out", down: func(_ *testing.T, srv *fake.Server, _ string, opts *SharedIndexInformerOptions) ListerWatcher {
			srv.AdvanceResourceVersion(5)
			opts.Snapshot.CatchUpTimeout = 500 * time.Millisecond
			return srv
		}},
		{name: "probe failed", want: "catch-up failed", down: func(_ *testing.T, srv *fake.Server, _ string, _ *SharedIndexInformerOptions) ListerWatcher {
			return probeLW{srv, func(runtime.Object, error) (runtime.Object, error) {
				return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", fmt.Errorf("no"))
			}}
		}},
		{name: "not comparable", want: "resourceVersion not comparable", down: func(_ *testing.T, srv *fake.Server, _ string, _ *SharedIndexInformerOptions) ListerWatcher {
			return probeLW{srv, func(obj runtime.Object, err error) (runtime.Object, error) {
				if err == nil {
					l, _ := meta.ListAccessor(obj)
					l.SetResourceVersion("x1")
				}
				return obj, err
			}}
		}},
		{name: "journal torn", want: "Warm restart synced", down: func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) ListerWatcher {
			spoilFile(t, journalPath(path), func(b []byte) []byte { b[len(b)-3] ^= 0xff; return b })
			return srv
		}},
		{name: "journal a link", want: "Snapshot journal not continued", down: func(t *testing.T, srv *fake.Server, path string, _ *SharedIndexInformerOptions) ListerWatcher {
			require.NoError(t, os.Remove(journalPath(path)))
			require.NoError(t, os.Symlink(path, journalPath(path)))
			return srv
		}},
		// A plain store stages the transform's output as it is: only a
		// compact store's prehold refuses it.
		{name: "catch-up event not applied", want: "Catch-up event not applied", compactOnly: true, down: func(_ *testing.T, srv *fake.Server, _ string, _ *SharedIndexInformerOptions) ListerWatcher {
			return same(srv)
		}, setup: func(inf SharedIndexInformer) {
			_ = inf.SetTransform(func(obj any) (any, error) {
				if s, ok := obj.(*v1.Secret); ok && s.Name == "s3" {
					// An output without metadata: its key fails, and a
					// KeyError's text prints it.
					return struct{ Data map[string][]byte }{s.Data}, nil
				}
				return obj, nil
			})
		}},
		{name: "save fails", want: "Snapshot not saved", down: func(t *testing.T, srv *fake.Server, path string, opts *SharedIndexInformerOptions) ListerWatcher {
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.Mkdir(path, 0o700)) // no file can be committed there
			return srv
		}},
	}
}

// Issue 39 item 4: no log line of a restart, whatever its fallback or
// error, prints a byte of a Secret's data: not read from a snapshot or a
// journal, not from a transform's output. Each case also checks its path
// was taken (its want text is logged).
func TestRestartLogsNoSecretData(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, tc := range secretCases() {
		for _, compactStore := range []bool{false, true} {
			if tc.compactOnly && !compactStore {
				continue
			}
			t.Run(fmt.Sprintf("%s/compact=%v", tc.name, compactStore), func(t *testing.T) {
				logs := &allLogs{}
				logs.capture(t)
				synctest.Test(t, func(t *testing.T) { testSecretCase(t, tc, compactStore, logs) })
				require.NotEmpty(t, logs.matching(tc.want), "the case's path was not taken")
				assert.Empty(t, logs.matching(secretMarker[:8]), "a log line prints a Secret's data")
			})
		}
	}
}

func testSecretCase(t *testing.T, tc secretCase, compactStore bool, logs *allLogs) {
	srv := fake.MustNew(fake.Options{Object: &v1.Secret{}, WatchListUnsupported: true})
	for _, n := range []string{"s0", "s1", "s2"} {
		must(t)(srv.Create(markedSecret(n, "1")))
	}
	path := filepath.Join(t.TempDir(), "secrets.snap")
	opts := snapshotOptions(path, compactStore)
	opts.Indexers = Indexers{NamespaceIndex: MetaNamespaceIndexFunc}
	_, stop := secretRun(t, srv, opts, logs, nil)
	stop()
	// A journal with a change: a warm start, a write, a stop within bound.
	_, stop = secretRun(t, srv, opts, logs, nil)
	must(t)(srv.Update(markedSecret("s2", "2")))
	synctest.Wait()
	stop()
	require.FileExists(t, journalPath(path))

	must(t)(srv.Update(markedSecret("s0", "2")))
	must(t)(srv.Delete("ns", "s1"))
	must(t)(srv.Create(markedSecret("s3", "1")))
	lw := tc.down(t, srv, path, &opts)
	_, stop = secretRun(t, lw, opts, logs, tc.setup)
	// A second informer on the path, refused its lock.
	_, stopSecond := secretRun(t, lw, opts, logs, nil)
	stopSecond()
	stop()
}
