package integration

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache"
)

// newInformerFunc is the constructor shape shared by client-go and
// openinformer.
type newInformerFunc func(clientcache.ListerWatcher, runtime.Object, time.Duration, clientcache.Indexers) clientcache.SharedIndexInformer

// implementation names an informer constructor under test.
type implementation struct {
	name        string
	newInformer newInformerFunc
}

// implementations run side by side against the same server. The first is the
// reference; ratios in the figures are later/first.
var implementations = []implementation{
	{name: "client-go", newInformer: clientcache.NewSharedIndexInformer},
	{name: "openinformer", newInformer: cache.NewSharedIndexInformer},
}
