//go:build clientgo_v038

package cache

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientcache "k8s.io/client-go/tools/cache"
)

// client-go v0.38 words a batch's failures as its KeyErrors joined ahead of
// "not all items ...: <TransactionError of the keyed writes>". Its
// processDeltasInBatch is unexported and its informer cannot be fed an
// unkeyable delta, so the oracle is its exported KeyError and
// TransactionError, whose Error methods make the text. Our store keeps an
// object an index refuses (logged), so through it only KeyErrors fail; the
// mixed wording is checked on batchErrorV038 directly.
func TestBatchErrorWordingMatchesClientGoV038(t *testing.T) {
	require.True(t, clientGoV038)
	_, keyErr := DeletionHandlingMetaNamespaceKeyFunc("no meta")
	theirKeyErr := clientcache.KeyError{Obj: "no meta", Err: keyErr}
	for name, tc := range map[string]struct {
		deltas []Delta
		want   error
	}{
		"one unkeyable delta": {
			deltas: []Delta{{Type: Added, Object: newTestPod("ns", "a", "1")}, {Type: Added, Object: "no meta"}},
			want:   errors.Join(theirKeyErr),
		},
		"two unkeyable deltas": {
			deltas: []Delta{{Type: Added, Object: "no meta"}, {Type: Added, Object: newTestPod("ns", "a", "1")}, {Type: Deleted, Object: "no meta"}},
			want:   errors.Join(theirKeyErr, theirKeyErr),
		},
	} {
		t.Run(name, func(t *testing.T) {
			a, h := newControllerTestApplier()
			err := a.processBatch(tc.deltas, false)
			require.Error(t, err)
			assert.Equal(t, tc.want.Error(), err.Error())
			assert.Equal(t, []string{"add ns/a@1"}, h.calls, "only the applied writes notify")
			var ke KeyError
			assert.True(t, errors.As(err, &ke), "errors.As finds the KeyError as in client-go")
		})
	}
	t.Run("key errors and a failed write", func(t *testing.T) {
		refused := errors.New("refused")
		ours := batchErrorV038(&TransactionError{TotalTransactions: 4, SuccessfulIndices: []int{1}, Errors: []error{theirKeyErr, refused, theirKeyErr}})
		theirs := errors.Join(theirKeyErr, theirKeyErr, fmt.Errorf("not all items in the batch successfully processed: %s",
			(&clientcache.TransactionError{TotalTransactions: 2, SuccessfulIndices: []int{0}, Errors: []error{refused}}).Error()))
		assert.EqualError(t, ours, theirs.Error())
	})
}
