package cache

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An object of a relist that cannot be keyed is logged by what identifies
// it and the cause, never by its contents: a KeyError's own text would
// print the whole object, a Secret's data included.
func TestRelistObjectNotStoredLogsNoObjectContents(t *testing.T) {
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"password": []byte("hunter2")}}
	refuseSecrets := func(obj interface{}) (string, error) {
		if _, ok := obj.(*v1.Secret); ok {
			return "", errors.New("secrets are not keyed here")
		}
		return MetaNamespaceKeyFunc(obj)
	}
	h := &controllerTestHandler{}
	store := NewIndexer(refuseSecrets, Indexers{})
	h.store = store
	a := deltaApplier{handler: h, store: store}
	reported := captureReportedErrors(t)
	require.NoError(t, a.apply(Deltas{{Type: ReplacedAll, Object: ReplacedAllInfo{ResourceVersion: "2", Objects: []interface{}{
		secret, newTestPod("ns", "p", "1"), "a string",
	}}}}, false))
	assert.Equal(t, []string{
		"Object from a relist not stored: object has no meta: object does not implement the Object interfaces [type string]",
		"Object from a relist not stored: secrets are not keyed here [type *v1.Secret namespace ns name creds]",
	}, reported.take())
	assert.Equal(t, []string{"add ns/p@1"}, h.calls, "every other object is stored")
}

func TestWithoutObjectLeavesOtherErrorsAlone(t *testing.T) {
	err := errors.New("transforming: boom")
	identity, cause := withoutObject(err)
	assert.Equal(t, err, cause)
	assert.Nil(t, identity)
}

// informerFanout's ResourceEventHandler methods take notifyBatch's path: a
// preheld object reaches handlers read back. (An update that keeps the
// resource version reaches them too: with no resync period every handler
// counts as due for one, as in client-go.)
func TestInformerFanoutHandlerMethodsTakeTheBatchPath(t *testing.T) {
	_, lw := informerTestServer("a")
	inf := NewSharedIndexInformerWithOptions(lw, &v1.Pod{}, SharedIndexInformerOptions{Compact: &CompactOptions{}})
	got := make(chan string, 8)
	describe := func(kind string, obj interface{}) {
		pod, ok := obj.(*v1.Pod)
		if !ok {
			got <- fmt.Sprintf("%s %T", kind, obj)
			return
		}
		got <- kind + " " + pod.Name + "@" + pod.ResourceVersion
	}
	_, err := inf.AddEventHandler(ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { describe("add", obj) },
		UpdateFunc: func(_, obj interface{}) { describe("update", obj) },
		DeleteFunc: func(obj interface{}) { describe("delete", obj) },
	})
	require.NoError(t, err)
	stop := informerTestRun(inf)
	defer stop()
	informerTestWait(t, "sync", inf.HasSyncedChecker())
	assert.Equal(t, "add a@2", <-got)

	s := inf.(*sharedIndexInformer)
	held, err := s.indexer.(*cache).preholder()(newTestPod("ns", "b", "7"))
	require.NoError(t, err)
	fanout := informerFanout{s}
	s.blockDeltas.Lock()
	fanout.OnAdd(held, false)
	fanout.OnUpdate(newTestPod("ns", "b", "7"), newTestPod("ns", "b", "7"))
	fanout.OnUpdate(newTestPod("ns", "b", "7"), newTestPod("ns", "b", "8"))
	fanout.OnDelete(newTestPod("ns", "b", "8"))
	s.blockDeltas.Unlock()
	assert.Equal(t, []string{"add b@7", "update b@7", "update b@8", "delete b@8"}, []string{<-got, <-got, <-got, <-got},
		"the preheld object read back")
}
