package store

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	clientcache "k8s.io/client-go/tools/cache"
)

func TestBatchesComeBackZeroed(t *testing.T) {
	obj := "an object"
	b := GetBatch(20)
	for i := range 20 {
		b.ws = append(b.ws, write{key: fmt.Sprint("ns/", i%3), typ: clientcache.TransactionTypeUpdate, obj: obj, prior: heldPrior(obj, true)})
	}
	b.link() // more writes than writeLinkScan: the pooled map is used
	b.vals = append(b.vals, []string{"v"})
	b.Release()
	for range 10 { // the pool may hand back this batch or a fresh one
		b = GetBatch(3)
		assert.Empty(t, b.ws)
		for _, w := range b.ws[:cap(b.ws)] {
			assert.Zero(t, w, "no write pinned")
		}
		for _, v := range b.vals[:cap(b.vals)] {
			assert.Nil(t, v, "no index value pinned")
		}
		assert.Empty(t, b.last, "no key pinned")
		b.Release()
	}
}
