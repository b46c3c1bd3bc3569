package cache

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
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
	store := newCache(refuseSecrets, Indexers{}, nil)
	h.store = store
	a := newDeltaApplier(klog.Background(), store, tellHandler(h), nil)
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
