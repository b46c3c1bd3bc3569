package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	cache "github.com/openinformer/cache"
)

// wire stands between an informer and the in-process fake API server where
// a network would be: every object the server returns, a LIST's whole body
// or a watch event's object, is encoded as the API server encodes it
// (protobuf, Kubernetes' envelope) and decoded again, so each informer pays
// a real client's decoding and the bytes it would read are counted. The
// encoding is the server's work: its time is kept apart, so that a client's
// CPU can be told from the process's.
type wire struct {
	inner   cache.ListerWatcherWithContext
	encoder runtime.Encoder
	decoder runtime.Decoder
	// read counts the encoded bytes delivered; serverNanos the time spent
	// encoding them.
	read, serverNanos atomic.Int64
}

func newWire(inner cache.ListerWatcherWithContext) *wire {
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	return &wire{inner: inner, encoder: scheme.Codecs.EncoderForVersion(pb, corev1.SchemeGroupVersion), decoder: pb}
}

// reset zeroes the counters before a measured start.
func (w *wire) reset() {
	w.read.Store(0)
	w.serverNanos.Store(0)
}

// List lists without a context.
func (w *wire) List(opts metav1.ListOptions) (runtime.Object, error) {
	return w.ListWithContext(context.Background(), opts)
}

// Watch watches without a context.
func (w *wire) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return w.WatchWithContext(context.Background(), opts)
}

// ListWithContext lists from the server and carries the result over the wire.
func (w *wire) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	start := time.Now()
	list, err := w.inner.ListWithContext(ctx, opts)
	w.serverNanos.Add(int64(time.Since(start)))
	if err != nil {
		return nil, err
	}
	return w.carry(list)
}

// WatchWithContext watches the server and carries each event's object over
// the wire.
func (w *wire) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	inner, err := w.inner.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	ww := &wireWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go ww.run(w)
	return ww, nil
}

// carry encodes obj as the server would and decodes it as the client does.
func (w *wire) carry(obj runtime.Object) (runtime.Object, error) {
	start := time.Now()
	data, err := runtime.Encode(w.encoder, obj)
	w.serverNanos.Add(int64(time.Since(start)))
	if err != nil {
		return nil, err
	}
	w.read.Add(int64(len(data)))
	return runtime.Decode(w.decoder, data)
}

// wireWatch is a watch whose events have crossed the wire. Its goroutine,
// started by WatchWithContext, owns out and exits when the server's watch
// ends, which Stop causes.
type wireWatch struct {
	inner    watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (ww *wireWatch) run(w *wire) {
	defer close(ww.out)
	for ev := range ww.inner.ResultChan() {
		if obj, err := w.carry(ev.Object); err == nil {
			ev.Object = obj
		}
		select {
		case ww.out <- ev:
		case <-ww.stop:
			return
		}
	}
}

// Stop ends the watch.
func (ww *wireWatch) Stop() {
	ww.stopOnce.Do(func() {
		close(ww.stop)
		ww.inner.Stop()
	})
}

// ResultChan is the watch's events.
func (ww *wireWatch) ResultChan() <-chan watch.Event { return ww.out }
