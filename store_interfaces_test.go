package cache

import (
	"testing"

	clientcache "k8s.io/client-go/tools/cache"
)

// Values built here are client-go's interfaces, checked at compile time.
var (
	_ clientcache.Store                          = NewStore(MetaNamespaceKeyFunc)
	_ clientcache.Indexer                        = NewIndexer(MetaNamespaceKeyFunc, Indexers{})
	_ clientcache.ThreadSafeStore                = NewThreadSafeStore(Indexers{}, Indices{})
	_ clientcache.TransactionStore               = NewStore(MetaNamespaceKeyFunc).(clientcache.TransactionStore)
	_ clientcache.ThreadSafeStoreWithTransaction = NewThreadSafeStore(Indexers{}, Indices{}).(clientcache.ThreadSafeStoreWithTransaction)
	_ clientcache.TransactionStore               = &cache{}
)

func TestStoreValuesSatisfyClientGoInterfaces(t *testing.T) {
	if _, ok := NewStore(MetaNamespaceKeyFunc).(clientcache.TransactionStore); !ok {
		t.Fatal("NewStore is not a TransactionStore")
	}
	if _, ok := NewIndexer(MetaNamespaceKeyFunc, nil).(clientcache.TransactionStore); !ok {
		t.Fatal("NewIndexer is not a TransactionStore")
	}
	if _, ok := NewThreadSafeStore(nil, nil).(clientcache.ThreadSafeStoreWithTransaction); !ok {
		t.Fatal("NewThreadSafeStore is not a ThreadSafeStoreWithTransaction")
	}
}
