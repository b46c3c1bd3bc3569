package cache

import (
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
)

// A snapshot keeps the cold tier's objects compressed, its dictionary in
// the header: a warm restart loads them cold, without a LIST, and they read
// back equal, with the cold tier on or off.
func TestWarmRestartKeepsColdObjectsCold(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		srv := fake.MustNew(fake.Options{Object: &v1.Pod{}})
		pods := fixtures.Pods(3, 40)
		for _, p := range pods {
			p.ResourceVersion = ""
			_, err := srv.Create(p)
			require.NoError(t, err)
		}
		path := filepath.Join(t.TempDir(), "pods.snap")
		opts := snapshotOptions(path, true)
		opts.Compact.ColdAfter = MinColdAfter
		first := startWithSnapshot(t, srv, opts)
		time.Sleep(5 * MinColdAfter)
		synctest.Wait()
		stats := first.informer.(*sharedIndexInformer).indexer.storageStats()
		require.Equal(t, len(pods), stats.ColdObjects, "every pod cold before the save")
		saved := first.informer.GetStore().List()
		first.stop()
		h := snapshotHeader(t, path)
		assert.NotEmpty(t, h.Dictionary, "the header keeps the cold records' dictionary")

		for name, compactOpts := range map[string]*CompactOptions{
			"cold tier": {ColdAfter: MinColdAfter}, "compact": {}, "plain": nil,
		} {
			opts.Compact = compactOpts
			srv.ResetRequests()
			warm := startWithSnapshot(t, srv, opts)
			assert.Equal(t, []string{RestartSynced}, warm.metrics.outcomes, name)
			assert.Zero(t, srv.RequestCounts().FullSyncs(), name)
			if compactOpts != nil {
				stats := warm.informer.(*sharedIndexInformer).indexer.storageStats()
				assert.Equal(t, h.Dictionary != nil, stats.DictionaryBytes > 0, "%s: the dictionary adopted", name)
			}
			require.Len(t, saved, len(pods))
			for _, obj := range saved {
				want := obj.(*v1.Pod)
				got, ok, err := warm.informer.GetStore().GetByKey(want.Namespace + "/" + want.Name)
				require.NoError(t, err)
				require.True(t, ok, "%s: %s", name, want.Name)
				require.True(t, equality.Semantic.DeepEqual(want, got), "%s: %s reads back equal", name, want.Name)
			}
			warm.stop()
		}
	})
}
