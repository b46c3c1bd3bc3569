package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/fixtures"
)

const (
	baseline      = "(a) client-go Indexer, decoded"
	timingVariant = "timing"
	seed          = 17
	// dictionarySamples is how many objects prime a compression dictionary,
	// as a store would from the first objects of its initial list.
	dictionarySamples = 8
	// dictLevel is the DEFLATE level with a dictionary: the fastest that
	// uses one (BestSpeed ignores it).
	dictLevel = 2
)

// dictionarySize bounds the compression dictionary (the -dict flag).
var dictionarySize = 16 << 10

// variant is one way of holding n objects; build returns what must stay
// alive while the heap is measured.
type variant struct {
	name  string
	build func(src *source, n int) (any, error)
}

var variants = []variant{
	{baseline, func(src *source, n int) (any, error) {
		idx := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{
			clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
		return idx, fill(n, src, idx.Add)
	}},
	{"(b) ours NewIndexer, decoded", func(src *source, n int) (any, error) {
		return oursIndexer(src, n)
	}},
	{"(c) ours, decoded, managedFields stripped", func(src *source, n int) (any, error) {
		return oursIndexer(src, n, cache.WithTransformer(cache.TransformStripManagedFields()))
	}},
	{"(d) encoded protobuf", encoded(compact.Protobuf, false, compressNone)},
	{"(d) encoded cbor", encoded(compact.CBOR, false, compressNone)},
	{"(d) encoded json", encoded(compact.JSON, false, compressNone)},
	{"(e) encoded auto + deflate (BestSpeed)", encoded(compact.Auto, false, compressPlain)},
	{"(e) encoded auto + deflate + dictionary", encoded(compact.Auto, false, compressDict)},
	{"(f) stripped + encoded auto", encoded(compact.Auto, true, compressNone)},
	{"(f) stripped + auto + deflate + dictionary", encoded(compact.Auto, true, compressDict)},
	{"(g) ours NewCompactIndexer, no hot cache", compactIndexer(-1)},
	{"(g) ours NewCompactIndexer, hot 1000 (default)", compactIndexer(cache.DefaultHotObjects)},
	{"(g) ours NewCompactIndexer, stripped, no hot", compactIndexer(-1, cache.WithTransformer(cache.TransformStripManagedFields()))},
	{objectsAlone, func(src *source, n int) (any, error) {
		objs := make([]any, 0, n)
		return &objs, fill(n, src, func(obj any) error { objs = append(objs, obj); return nil })
	}},
}

// objectsAlone holds the objects in a slice and no cache: subtracted from
// another row, it leaves that cache's own cost per object.
const objectsAlone = "(z) the objects alone, in a slice"

// compactIndexer is the row of the real compact Indexer with a hot cache of
// hot objects (0: the default, negative: none).
func compactIndexer(hot int, opts ...cache.StoreOption) func(src *source, n int) (any, error) {
	return func(src *source, n int) (any, error) {
		idx := cache.NewCompactIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			cache.CompactOptions{HotObjects: hot}, opts...)
		return idx, fill(n, src, idx.Add)
	}
}

func oursIndexer(src *source, n int, opts ...cache.StoreOption) (any, error) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, opts...)
	return idx, fill(n, src, idx.Add)
}

func fill(n int, src *source, add func(any) error) error {
	return src.each(n, func(obj kruntime.Object) error { return add(obj) })
}

// measure runs one variant in this process and prints its result.
func measure(name, kind string, n int) error {
	src, err := newSource(kind)
	if err != nil {
		return err
	}
	if name == timingVariant {
		return printResult(measureTimings(src))
	}
	for _, v := range variants {
		if v.name != name {
			continue
		}
		if heapProfile != "" {
			runtime.MemProfileRate = 1
		}
		before := liveHeap()
		keep, err := v.build(src, n)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		after := liveHeap()
		if err := writeHeapProfile(); err != nil {
			return err
		}
		runtime.KeepAlive(keep)
		return printResult(result{Variant: name, Objects: n, Heap: float64(after) - float64(before)}, nil)
	}
	return fmt.Errorf("no variant %q", name)
}

func printResult(r result, err error) error {
	if err != nil {
		return err
	}
	r.PeakRSS, r.Seconds = peakRSS(), time.Since(started).Seconds()
	return json.NewEncoder(os.Stdout).Encode(r)
}

// heapProfile is where a row writes its heap profile (the -heapprofile
// flag); empty for none.
var heapProfile string

// writeHeapProfile writes the heap profile to heapProfile, if set.
func writeHeapProfile() error {
	if heapProfile == "" {
		return nil
	}
	f, err := os.Create(heapProfile)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// source hands out fixtures as an informer holds them: freshly decoded
// from the JSON the API server sends, every string its own allocation,
// times in the local zone and typed objects without TypeMeta.
type source struct {
	kind   string
	pods   *fixtures.PodSource
	gvk    schema.GroupVersionKind
	decode kruntime.Decoder
}

func newSource(kind string) (*source, error) {
	s := &source{kind: kind, decode: typedDecoder()}
	switch kind {
	case "pods":
		s.pods = fixtures.NewPodSource(seed)
		s.gvk = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	case "configmaps":
		s.gvk = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	case "custom":
	case "small":
		s.gvk = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	default:
		return nil, fmt.Errorf("unknown kind %q: want pods, configmaps, custom or small", kind)
	}
	return s, nil
}

func (s *source) fixture(i int) kruntime.Object {
	switch s.kind {
	case "pods":
		return s.pods.Pod(i)
	case "configmaps":
		return fixtures.ConfigMap(seed, i)
	case "small":
		return smallPod(i)
	default:
		return fixtures.CustomResource(seed, i)
	}
}

func (s *source) wire(i int) kruntime.Object { return s.decodeJSON(s.json(i)) }

// json is fixture i as the API server sends it.
func (s *source) json(i int) []byte {
	data, err := json.Marshal(s.fixture(i))
	if err != nil {
		panic(err)
	}
	return data
}

// decodeJSON decodes data as an informer does.
func (s *source) decodeJSON(data []byte) kruntime.Object {
	if s.kind == "custom" {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			panic(err)
		}
		return u
	}
	obj, _, err := s.decode.Decode(data, &s.gvk, nil)
	if err != nil {
		panic(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return obj
}

func (s *source) prototype() kruntime.Object {
	if s.kind == "custom" {
		return &unstructured.Unstructured{}
	}
	obj, _ := scheme.Scheme.New(s.gvk)
	return obj
}

// smallPod is a pod with only a namespace, name, resource version and one
// label, as in the store benchmarks: the cache's own cost per object is then
// most of what a row measures.
func smallPod(i int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:       "ns-" + strconv.Itoa(i%100),
		Name:            "pod-" + strconv.Itoa(i),
		ResourceVersion: strconv.Itoa(i),
		Labels:          map[string]string{"app": "app-" + strconv.Itoa(i%50)},
	}}
}
