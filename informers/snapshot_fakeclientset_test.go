package informers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

// lines is a logger's output, one entry a line.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) context(ctx context.Context) context.Context {
	return klog.NewContext(ctx, funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.all = append(l.all, prefix+" "+args)
	}, funcr.Options{Verbosity: 4}))
}

func (l *lines) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.all {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// Issue 40 item 3, the user's way: a typed factory with WithSnapshots over
// client-go's fake clientset. Its lists carry a resourceVersion, so a start
// with no write saves at stop and the next start is warm; its objects carry
// none, so after a write through it the cache has no version to resume
// from: the stop's save says why, and the next start, replaying the write,
// falls back cold and says why.
func TestWithSnapshotsOnClientGoFakeClientset(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) { startThrice(t, dir) })
}

func startThrice(t *testing.T, dir string) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	var logs []*lines
	for start := range 3 {
		log := &lines{}
		logs = append(logs, log)
		f := NewSharedInformerFactoryWithOptions(cs, 0, WithSnapshots(dir, "v"))
		pods := f.Core().V1().Pods()
		pods.Informer()
		ctx, cancel := context.WithCancel(log.context(t.Context()))
		f.StartWithContext(ctx)
		require.NoError(t, f.WaitForCacheSyncWithContext(ctx).Err)
		if start == 1 {
			_, err := cs.CoreV1().Pods("ns").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("b", start)}}, metav1.CreateOptions{})
			require.NoError(t, err)
			synctest.Wait()
			got, err := pods.Lister().List(labels.Everything())
			require.NoError(t, err)
			require.Len(t, got, 2)
		}
		cancel()
		f.Shutdown()
	}
	assert.Len(t, logs[0].matching(`"reason"="no snapshot"`), 1, "first start is cold")
	assert.Len(t, logs[1].matching("Warm restart synced from the snapshot"), 1, "the save at the first stop is used")
	notSaved := logs[1].matching("Snapshot not saved")
	require.Len(t, notSaved, 1, "the save after the write says why")
	assert.Contains(t, notSaved[0], "no resourceVersion")
	assert.Contains(t, notSaved[0], "fake.Server")
	// The first stop's snapshot stayed; resuming it replays the write,
	// whose event has no resourceVersion to compare: a cold start that
	// says so.
	cold := logs[2].matching("Warm restart not used")
	require.Len(t, cold, 1)
	assert.Contains(t, cold[0], `"reason"="resourceVersion not comparable"`)
	assert.Len(t, logs[2].matching("Snapshot saved"), 1, "a fresh list carries a version again")
}
