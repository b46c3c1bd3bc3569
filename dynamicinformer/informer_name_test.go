package dynamicinformer

import (
	"sync"
	"testing"

	cache "github.com/openinformer/cache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// noMetrics is an InformerMetricsProvider that records nothing: installed,
// it makes factories derive names.
type noMetrics struct{}

func (noMetrics) Inc()            {}
func (noMetrics) Dec()            {}
func (noMetrics) Set(float64)     {}
func (noMetrics) Observe(float64) {}

func (noMetrics) NewQueuedItemMetric(cache.InformerNameAndResource) cache.GaugeMetric {
	return noMetrics{}
}
func (noMetrics) NewProcessingLatencyMetric(cache.InformerNameAndResource) cache.HistogramMetric {
	return noMetrics{}
}
func (noMetrics) NewStoreResourceVersionMetric(cache.InformerNameAndResource) cache.GaugeMetric {
	return noMetrics{}
}

// installMetrics installs noMetrics process-wide, once: in this package's
// tests only.
var installMetrics = sync.OnceFunc(func() { cache.SetInformerMetricsProvider(noMetrics{}) })

// Issue 40 item 5: with a metrics provider installed, a factory given no
// name derives one, as the typed factory does ("informers"): its
// informers are identified as "dynamicinformer", a second factory's as
// "dynamicinformer-2", and Shutdown frees the name, so the series stay
// bounded by the factories alive. WithInformerOptions may set its own
// Identifier.
func TestFactoryDerivesItsInformerName(t *testing.T) {
	defer goleak.VerifyNone(t)
	installMetrics()
	cache.ResetInformerNamesForTesting()
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	var got cache.InformerNameAndResource
	see := WithInformerOptions(func(_ schema.GroupVersionResource, o *cache.SharedIndexInformerOptions) { got = o.Identifier })
	name := func(f DynamicSharedInformerFactory) string {
		got = cache.InformerNameAndResource{}
		f.ForResource(gvr).Informer()
		assert.True(t, got.Reserved())
		assert.Equal(t, gvr, got.GroupVersionResource())
		return got.Name()
	}
	first := NewDynamicSharedInformerFactoryWithOptions(client, 0, see)
	second := NewDynamicSharedInformerFactoryWithOptions(client, 0, WithNamespace("ns"), see)
	assert.Equal(t, "dynamicinformer", name(first))
	firstID := got
	assert.Equal(t, "dynamicinformer-2", name(second))
	first.Shutdown()
	assert.False(t, firstID.Reserved(), "Shutdown releases the name")
	third := NewDynamicSharedInformerFactoryWithOptions(client, 0, see)
	assert.Equal(t, "dynamicinformer", name(third), "free again")

	own, err := cache.NewInformerName("mine")
	require.NoError(t, err)
	defer own.Release()
	named := NewDynamicSharedInformerFactoryWithOptions(client, 0, WithInformerOptions(func(gvr schema.GroupVersionResource, o *cache.SharedIndexInformerOptions) {
		o.Identifier = own.WithResource(gvr)
	}), see)
	assert.Equal(t, "mine", name(named))
	for _, f := range []DynamicSharedInformerFactory{second, third, named} {
		f.Shutdown()
	}
}
