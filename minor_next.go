package cache

import (
	"errors"
	"fmt"
	"reflect"

	clientcache "k8s.io/client-go/tools/cache"
)

// clientGoV038 reports whether this binary is built with client-go v0.38 or
// later, whose SharedIndexInformer has SetShardSelector. The few behaviours
// that changed between v0.37 and v0.38 in a way v0.37 users can observe
// follow it, so that the package mirrors whichever minor the user's go.mod
// selects without a build tag.
var clientGoV038 = func() bool {
	_, ok := reflect.TypeFor[clientcache.SharedIndexInformer]().MethodByName("SetShardSelector")
	return ok
}()

// batchErrorV038 words a batch's failures as client-go v0.38 does. Its
// batch skips a delta whose key cannot be computed before the transaction
// (our store skips it alone, its write record carrying the KeyError), so
// the KeyErrors are joined first, then the "not all items" error counting
// only the transaction's own writes, if any of those failed.
func batchErrorV038(txErr *TransactionError) error {
	var keyErrs []error
	rest := TransactionError{SuccessfulIndices: txErr.SuccessfulIndices}
	for _, err := range txErr.Errors {
		if errors.As(err, new(KeyError)) {
			keyErrs = append(keyErrs, err)
		} else {
			rest.Errors = append(rest.Errors, err)
		}
	}
	if len(rest.Errors) == 0 {
		return errors.Join(keyErrs...)
	}
	rest.TotalTransactions = txErr.TotalTransactions - len(keyErrs)
	return errors.Join(append(keyErrs, fmt.Errorf("not all items in the batch successfully processed: %s", rest.Error()))...)
}
