package cache

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/snapshot"
	"github.com/openinformer/cache/internal/store"
)

// stagedLines reads staged back as podLines, decoding preheld values.
func stagedLines(t *testing.T, staged map[string]any) []string {
	objs := make([]any, 0, len(staged))
	for _, v := range staged {
		if p, ok := v.(store.Preheld); ok {
			obj, ok := p.View(false)
			require.True(t, ok)
			v = obj
		}
		objs = append(objs, v)
	}
	return cacheLines(objs)
}

// A save walks and writes a frozen state without the store's lock: while
// it is stalled on its output mid-walk, writers update, delete and add,
// and the snapshot still holds exactly the state frozen.
func TestSnapshotSaveNeverBlocksWriters(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, compactStore := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compactStore), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testSaveDuringWrites(t, compactStore) })
		})
	}
}

func testSaveDuringWrites(t *testing.T, compactStore bool) {
	indexers := Indexers{NamespaceIndex: MetaNamespaceIndexFunc, "label": podLabelIndex}
	var c *cache
	if compactStore {
		c = NewCompactIndexer(informerKeyFunc, indexers, CompactOptions{}).(*cache)
	} else {
		c = NewIndexer(informerKeyFunc, indexers).(*cache)
	}
	// 2000 pods of 600 bytes or more: several times the writer's buffer.
	const pods = 2000
	for i := range pods {
		p := labeledPod(fmt.Sprintf("p%04d", i), "1")
		p.ResourceVersion = "5"
		p.Annotations = map[string]string{"pad": strings.Repeat("x", 600)}
		require.NoError(t, c.Add(p))
	}
	st, err := store.NewSnapshots(c.storage, &v1.Pod{}, "")
	require.NoError(t, err)
	before := cacheLines(c.List())

	f := c.storage.Freeze()
	pr, pw := io.Pipe()
	w, err := snapshot.NewWriter(pw, snapshot.Header{Resource: "pods", Encoding: st.Encoding(f.Set()), ResourceVersion: f.RV(), Count: f.Len()})
	require.NoError(t, err)
	saved := make(chan error, 1)
	go func() {
		err := st.Write(w, f)
		pw.CloseWithError(err)
		saved <- err
	}()
	synctest.Wait()
	require.Empty(t, saved, "the save is stalled on its output")

	for i := range pods {
		p := labeledPod(fmt.Sprintf("p%04d", i), "2")
		p.ResourceVersion = "6"
		if i%3 == 0 {
			require.NoError(t, c.Delete(p))
			continue
		}
		require.NoError(t, c.Update(p))
	}
	require.NoError(t, c.Add(labeledPod("new", "2")))
	require.Empty(t, saved, "writers went on while the save was stalled")

	r, err := snapshot.NewReader(pr, -1, nil)
	require.NoError(t, err)
	staged := map[string]any{}
	rv, err := st.Read(r, staged)
	require.NoError(t, err)
	require.NoError(t, <-saved)
	assert.Equal(t, "5", rv)
	assert.Equal(t, before, stagedLines(t, staged))
	if compactStore {
		// What the preheld objects hold is checked in internal/store
		// (TestSnapshotReadsBackHeldIndexValues).
		p := staged["ns/p0001"].(store.Preheld)
		assert.Contains(t, p.IndexValues(), []string{"1"}, "the label index's values come from the frame")
	}
}

// Periodic snapshots start only once synced, are skipped while the
// version has not moved, and follow it when it does.
func TestSnapshotEveryInterval(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		must(t)(srv.Create(labeledPod("a", "1")))
		path := filepath.Join(t.TempDir(), "pods.snap")
		opts := snapshotOptions(path, true)
		opts.Snapshot.Interval = time.Minute
		run := startWithSnapshot(t, srv, opts)
		defer run.stop()
		assert.NoFileExists(t, path, "no snapshot before the first interval")

		time.Sleep(time.Minute + time.Second)
		first := snapshotHeader(t, path)
		assert.Equal(t, srv.ResourceVersion(), first.ResourceVersion)

		time.Sleep(time.Minute)
		assert.Equal(t, first.WrittenAt, snapshotHeader(t, path).WrittenAt, "not rewritten at the same version")

		must(t)(srv.Create(labeledPod("b", "1")))
		time.Sleep(time.Minute)
		next := snapshotHeader(t, path)
		assert.Equal(t, srv.ResourceVersion(), next.ResourceVersion)
		assert.Equal(t, 2, next.Count)
	})
}

func snapshotHeader(t *testing.T, path string) snapshot.Header {
	r, err := snapshot.Open(path, nil)
	require.NoError(t, err)
	defer r.Close()
	return r.Header()
}
