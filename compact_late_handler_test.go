package cache

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// A handler added to a running compact informer (controller-runtime adds
// every controller's this way, after its informer synced) gets every
// stored object as an initial add, read back one at a time as its
// listener delivers them: adding it decodes nothing, and while its
// handler is busy with the first object the rest stay encoded.
func TestLateHandlerOnCompactInformerDecodesAsItDelivers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		names := make([]string, 300)
		for i := range names {
			names[i] = fmt.Sprint("pod-", i)
		}
		_, lw := informerTestServer(names...)
		inf := NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, SharedIndexInformerOptions{Compact: &CompactOptions{HotObjects: -1}})
		stop := informerTestRun(inf)
		synctest.Wait()
		require.True(t, inf.HasSynced())
		state := informerState{inf.(*sharedIndexInformer)}
		before := state.Storage().PlainDecodes

		release := make(chan struct{})
		got := map[string]*v1.Pod{}
		_, err := inf.AddEventHandler(ResourceEventHandlerDetailedFuncs{AddFunc: func(obj any, initial bool) {
			if len(got) == 0 {
				<-release
			}
			assert.True(t, initial)
			got[keyOfPod(obj.(*v1.Pod))] = obj.(*v1.Pod)
		}})
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, uint64(1), state.Storage().PlainDecodes-before, "only the object being handled is decoded")

		close(release)
		synctest.Wait()
		require.Len(t, got, len(names))
		for key, pod := range got {
			stored, ok, err := inf.GetIndexer().GetByKey(key)
			require.NoError(t, err)
			require.True(t, ok)
			assert.True(t, equality.Semantic.DeepEqual(stored, pod), key)
		}
		stop()
	})
	goleak.VerifyNone(t)
}
