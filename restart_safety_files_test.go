package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/snapshot"
)

// Issue 39 item 1: every file an informer leaves is 0600, whatever the
// umask: the snapshot, its journal (a warm start's and a save's), the lock.
func TestRestartFilesAre0600(t *testing.T) {
	defer goleak.VerifyNone(t)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		path, opts := savedWithThreePods(t, srv, true)
		warm := startWithSnapshot(t, srv, opts)
		must(t)(srv.Create(labeledPod("d", "1")))
		synctest.Wait()
		warm.stop()
		entries, err := os.ReadDir(filepath.Dir(path))
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
			st, err := os.Lstat(filepath.Join(filepath.Dir(path), e.Name()))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), e.Name())
		}
		assert.ElementsMatch(t, []string{"pods.snap", "pods.snap.journal", "pods.snap.lock"}, names)
	})
}

// plantVictim makes name a link to a file holding "secret" and returns a
// check that the file is untouched.
func plantVictim(t *testing.T, name string) func() {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("secret"), 0o600))
	require.NoError(t, os.Symlink(victim, name))
	return func() {
		t.Helper()
		got, err := os.ReadFile(victim)
		require.NoError(t, err)
		assert.Equal(t, "secret", string(got), "written through the link at %s", name)
	}
}

// Issue 39 item 2: a link planted at the journal's names is never written
// through: at <path>.journal a warm start leaves it (and runs on, saving
// at its stop), at <path>.journal.next a start removes it (a leftover's
// name) and the save makes its own file.
func TestRestartNeverWritesThroughALink(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		path, opts := savedWithThreePods(t, srv, false)
		require.NoError(t, os.Remove(journalPath(path)))
		journalUntouched := plantVictim(t, journalPath(path))
		nextUntouched := plantVictim(t, nextJournalPath(path))
		must(t)(srv.Update(labeledPod("a", "2")))
		run := startWithSnapshot(t, srv, opts)
		assert.Equal(t, []string{RestartSynced}, run.metrics.outcomes)
		assert.Len(t, run.log.matching("Snapshot journal not continued"), 1)
		must(t)(srv.Update(labeledPod("b", "2")))
		synctest.Wait()
		run.stop()
		journalUntouched()
		nextUntouched()
		assert.Equal(t, 1, run.metrics.saved)
		lines, _ := coldOracle(t, srv)
		again := startWithSnapshot(t, srv, opts)
		defer again.stop()
		assert.Equal(t, []string{RestartSynced}, again.metrics.outcomes)
		assert.Equal(t, lines, again.rec.sorted())
	})
}

// Issue 39 item 5: a start removes what crashed saves left (temporary
// files, an uncommitted journal), and only those.
func TestRestartRemovesLeftovers(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		path, opts := savedWithThreePods(t, srv, true)
		dir := filepath.Dir(path)
		for _, name := range []string{".pods.snap.tmp-1234", ".pods.snap.tmp-99", "pods.snap.journal.next", ".other.snap.tmp-1", "keep"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("x", 1000)), 0o600))
		}
		run := startWithSnapshot(t, srv, opts)
		defer run.stop()
		assert.Equal(t, []string{RestartSynced}, run.metrics.outcomes)
		assert.Len(t, run.log.matching("Removed the files of interrupted snapshot saves"), 1)
		for _, name := range []string{".pods.snap.tmp-1234", ".pods.snap.tmp-99", "pods.snap.journal.next"} {
			assert.NoFileExists(t, filepath.Join(dir, name))
		}
		for _, name := range []string{".other.snap.tmp-1", "keep", "pods.snap", "pods.snap.journal"} {
			assert.FileExists(t, filepath.Join(dir, name))
		}
	})
}

// Issue 39 item 3: one informer per path. A second informer on a path in
// use runs cold without snapshots, saying why at its start, and never
// touches the first one's files; once the first stopped, the path is free.
func TestRestartOneInformerPerPath(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		path, opts := savedWithThreePods(t, srv, false)
		first := startWithSnapshot(t, srv, opts)
		other := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		must(t)(other.Create(labeledPod("x", "1")))
		second := startWithSnapshot(t, other, opts)
		off := second.log.matching("Warning: snapshots turned off")
		require.Len(t, off, 1)
		assert.Contains(t, off[0], "in use by another informer or process")
		assert.Empty(t, second.metrics.outcomes, "no warm start tried")
		assert.Equal(t, []string{"add ns/x@2[1] initial=true"}, second.rec.sorted())
		second.stop()
		assert.Zero(t, second.metrics.saved)
		must(t)(srv.Create(labeledPod("d", "1")))
		synctest.Wait()
		first.stop()
		third := startWithSnapshot(t, srv, opts)
		defer third.stop()
		assert.Equal(t, []string{RestartSynced}, third.metrics.outcomes)
		assert.Len(t, third.rec.sorted(), 4)
		_, err := snapshot.TryLock(path)
		assert.ErrorIs(t, err, snapshot.ErrLocked)
	})
}

// Issue 39 item 3: a snapshot is resumed only against the cluster and the
// history it was taken from. Another server whose first object the
// snapshot does not hold as listed, a server restored from a backup and
// written to since (its history went back without a revision bump), and
// a snapshot recorded with another ClusterID all fall back cold, logged
// once; what the cold sync gives is the server's, nothing of the
// snapshot's.
func TestRestartRefusesAnotherClustersSnapshot(t *testing.T) {
	defer goleak.VerifyNone(t)
	cases := map[string]func(t *testing.T, opts *SharedIndexInformerOptions) *fake.Server{
		// a, b, c at 2, 3, 4 were saved.
		"another cluster": func(t *testing.T, _ *SharedIndexInformerOptions) *fake.Server {
			srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
			for _, n := range []string{"0", "b", "x", "y"} {
				must(t)(srv.Create(labeledPod(n, "1")))
			}
			return srv
		},
		"history went back": func(t *testing.T, _ *SharedIndexInformerOptions) *fake.Server {
			srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
			must(t)(srv.Create(labeledPod("a", "1")))                     // 2, as saved
			must(t)(srv.Update(labeledPod("a", "restored-then-written"))) // 3
			must(t)(srv.Create(labeledPod("c", "1")))                     // 4
			must(t)(srv.Create(labeledPod("d", "1")))                     // 5
			return srv
		},
		"another ClusterID": func(t *testing.T, opts *SharedIndexInformerOptions) *fake.Server {
			srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
			for _, n := range []string{"a", "b", "c"} {
				must(t)(srv.Create(labeledPod(n, "1")))
			}
			opts.Snapshot.ClusterID = "cluster-2"
			return srv
		},
	}
	for name, server := range cases {
		for _, compactStore := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/compact=%v", name, compactStore), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					saved := fake.MustNew(fake.Options{Object: &v1.Pod{}})
					_, opts := savedWithThreePods(t, saved, compactStore)
					srv := server(t, &opts)
					run := startWithSnapshot(t, srv, opts)
					defer run.stop()
					logged := run.log.matching("Warm restart not used")
					require.Len(t, logged, 1)
					assert.Contains(t, logged[0], `"snapshot unusable"`)
					assert.Equal(t, []string{"snapshot unusable"}, run.metrics.outcomes)
					lines, cached := coldOracle(t, srv)
					assert.Equal(t, lines, run.rec.sorted())
					assert.Equal(t, cached, cacheLines(run.informer.GetStore().List()))
				})
			})
		}
	}
}

// The probe's check does not refuse what it cannot contradict: a first
// object newer than the snapshot (changed since), or one the snapshot
// holds as listed.
func TestRestartProbeCheckKeepsAGoodSnapshot(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		_, opts := savedWithThreePods(t, srv, true)
		opts.Snapshot.ClusterID = ""
		run := startWithSnapshot(t, srv, opts)
		assert.Equal(t, []string{RestartSynced}, run.metrics.outcomes)
		run.stop()
		must(t)(srv.Update(labeledPod("a", "2")))
		must(t)(srv.Create(labeledPod("0", "1")))
		run = startWithSnapshot(t, srv, opts)
		defer run.stop()
		assert.Equal(t, []string{RestartSynced}, run.metrics.outcomes)
	})
}
