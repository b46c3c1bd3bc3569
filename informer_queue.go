package cache

import (
	"fmt"

	clientfeatures "k8s.io/client-go/features"
	"k8s.io/klog/v2"
)

// informerQueueOptions is what an informer knows when it builds its queue.
type informerQueueOptions struct {
	logger     klog.Logger
	objectType interface{}
	store      KeyListerGetter
	// prehold, when not nil, is the store's preholder.
	prehold         preholdFunc
	transform       TransformFunc
	identifier      InformerNameAndResource
	metricsProvider InformerMetricsProvider
}

// newInformerQueue builds the queue between an informer's Reflector and its
// store, a RealFIFO as the client-go feature gates select at the time of the
// call: with AtomicFIFO an atomic RealFIFO that emits bookmarks and unlocks
// while processing per UnlockWhileProcessingFIFO; without it a RealFIFO that
// consults the store. InOrderInformers, which could once select a DeltaFIFO,
// is locked on in client-go v0.37.2. It also returns the queue's logger and
// the Reflector's hooks: how the queue takes objects already transformed,
// and the prehold, opts.prehold for an atomic queue, else nil.
func newInformerQueue(opts informerQueueOptions) (klog.Logger, Queue, reflectorHooks) {
	gates := clientfeatures.FeatureGates()
	logger := opts.logger
	ro := RealFIFOOptions{
		Logger:          &logger,
		Name:            fmt.Sprintf("RealFIFO %T", opts.objectType),
		KeyFunction:     MetaNamespaceKeyFunc,
		Transformer:     opts.transform,
		Identifier:      opts.identifier,
		MetricsProvider: opts.metricsProvider,
	}
	if gates.Enabled(clientfeatures.AtomicFIFO) {
		ro.AtomicEvents = true
		ro.EmitDeltaTypeBookmark = true
		ro.UnlockWhileProcessing = gates.Enabled(clientfeatures.UnlockWhileProcessingFIFO)
	} else {
		ro.KnownObjects = opts.store
	}
	var prehold preholdFunc
	if ro.AtomicEvents {
		// One ReplacedAll carries a watch-list's objects to the store as
		// they were held; a per-object Replace would need every consumer of
		// its deltas to read them back.
		prehold = opts.prehold
	}
	f := NewRealFIFOWithOptions(ro)
	return f.logger, f, reflectorHooks{queue: f.pretransformed(), prehold: prehold}
}
