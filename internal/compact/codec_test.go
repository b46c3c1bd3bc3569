package compact

import (
	"compress/flate"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/openinformer/cache/internal/fixtures"
)

// fromWire is obj as an informer holds it after client-go decoded it from
// the API server's JSON: times in the local zone, TypeMeta cleared on typed
// objects, integers of unstructured objects as int64.
func fromWire(t testing.TB, obj runtime.Object) runtime.Object {
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	if _, ok := obj.(*unstructured.Unstructured); ok {
		out := &unstructured.Unstructured{}
		require.NoError(t, out.UnmarshalJSON(data))
		return out
	}
	kinds, _, err := scheme.Scheme.ObjectKinds(obj)
	require.NoError(t, err)
	out, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, &kinds[0], nil)
	require.NoError(t, err)
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out
}

func fixtureSets(t testing.TB) map[string][]runtime.Object {
	sets := map[string][]runtime.Object{
		"pods":       fixtures.Objects(fixtures.Pods(11, 8)),
		"configmaps": fixtures.Objects(fixtures.ConfigMaps(11, 6)),
		"custom":     fixtures.Objects(fixtures.CustomResources(11, 6)),
	}
	for _, objs := range sets {
		for i := range objs {
			objs[i] = fromWire(t, objs[i])
		}
	}
	return sets
}

func samples(t testing.TB, c *Codec, objs []runtime.Object) [][]byte {
	out := make([][]byte, len(objs))
	for i, o := range objs {
		e, err := c.Encode(o)
		require.NoError(t, err)
		out[i] = e.Bytes()
	}
	return out
}

// Objects as an informer holds them come back equal even under
// reflect.DeepEqual, in every format, compressed or not.
func TestRoundTripFixtures(t *testing.T) {
	for name, objs := range fixtureSets(t) {
		for _, f := range []Format{Auto, Protobuf, CBOR, JSON} {
			plain, err := NewCodec(objs[0], Options{Format: f})
			require.NoError(t, err)
			dict := Dictionary(samples(t, plain, objs[:5]), 32<<10)
			for _, comp := range []struct {
				name string
				dict []byte
			}{{"plain", nil}, {"deflate", []byte{}}, {"deflate+dict", dict}} {
				opts := Options{Format: f}
				if comp.dict != nil {
					opts.Compressor, err = NewCompressor(2, comp.dict)
					require.NoError(t, err)
				}
				c, err := NewCodec(objs[0], opts)
				require.NoError(t, err)
				checked := objs
				if opts.Compressor != nil {
					// Compression is independent of the format, and priming
					// a writer is slow under -race.
					checked = objs[:min(len(objs), int(f))]
				}
				for _, obj := range checked {
					data, err := c.Encode(obj)
					require.NoError(t, err)
					got, err := c.Decode(data)
					require.NoError(t, err)
					if !reflect.DeepEqual(obj, got) {
						t.Fatalf("%s %v %s: %s", name, c.Format(), comp.name, objDiff(obj, got))
					}
				}
			}
		}
	}
}

func TestFormatChoice(t *testing.T) {
	for _, tc := range []struct {
		prototype runtime.Object
		want      Format
		result    Format
	}{
		{&corev1.Pod{}, Auto, Protobuf},
		{&corev1.Pod{}, CBOR, CBOR},
		{&corev1.Pod{}, JSON, JSON},
		{&unstructured.Unstructured{}, Auto, CBOR},
		{&unstructured.Unstructured{}, Protobuf, CBOR},
		{&unstructured.Unstructured{}, JSON, JSON},
		{&widget{}, Auto, JSON},
		{&widget{}, CBOR, JSON},
	} {
		c, err := NewCodec(tc.prototype, Options{Format: tc.want})
		require.NoError(t, err)
		assert.Equal(t, tc.result, c.Format(), "%T asking for %v", tc.prototype, tc.want)
	}
}

// widget is a typed object no scheme knows, like a user's CRD type.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Size              int `json:"size"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func TestUnregisteredTypeRoundTrips(t *testing.T) {
	w := &widget{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{"a": "b"}}, Size: 3}
	c, err := NewCodec(&widget{}, Options{})
	require.NoError(t, err)
	data, err := c.Encode(w)
	require.NoError(t, err)
	got, err := c.Decode(data)
	require.NoError(t, err)
	assert.Equal(t, w, got)
}

// Decode hands out fresh objects: a caller mutating one cannot change what
// the bytes or another read return.
func TestDecodeReturnsFreshObjects(t *testing.T) {
	pod := fromWire(t, fixtures.Pods(3, 1)[0])
	c, err := NewCodec(pod, Options{})
	require.NoError(t, err)
	data, err := c.Encode(pod)
	require.NoError(t, err)
	first, err := c.Decode(data)
	require.NoError(t, err)
	first.(*corev1.Pod).Labels["app"] = "mutated"
	first.(*corev1.Pod).ManagedFields[0].FieldsV1.SetRawString("X")
	second, err := c.Decode(data)
	require.NoError(t, err)
	assert.True(t, reflect.DeepEqual(pod, second))
}

// roundTripCase is an object outside what an informer holds, and how it
// comes back, the same in every format unless formats says otherwise.
type roundTripCase struct {
	obj      runtime.Object
	semantic bool
	exact    bool
	// formats restricts the case to these formats.
	formats []Format
}

// TestWhereRoundTripsAreNotExact pins down the cases the documentation lists:
// what comes back differently from objects built in memory rather than
// decoded from the API server.
func TestWhereRoundTripsAreNotExact(t *testing.T) {
	utc := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	u := func(extra map[string]any) *unstructured.Unstructured {
		obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}
		for k, v := range extra {
			obj[k] = v
		}
		return &unstructured.Unstructured{Object: obj}
	}
	all := []Format{Protobuf, CBOR, JSON}
	for name, tc := range map[string]roundTripCase{
		"TypeMeta of the type is kept":    {&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}, true, true, all},
		"empty slice comes back nil":      {&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{}}}, true, false, all},
		"empty map comes back nil":        {&corev1.ConfigMap{Data: map[string]string{}}, true, false, all},
		"UTC time comes back local":       {&corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(utc)}}, true, false, all},
		"sub-second time is truncated":    {&corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(utc.Add(time.Millisecond).Local())}}, false, false, all},
		"quantity is canonicalised":       {&corev1.Pod{Spec: corev1.PodSpec{Overhead: corev1.ResourceList{"cpu": resource.MustParse("1000m")}}}, true, false, all},
		"unstructured empty list, map":    {u(map[string]any{"l": []any{}, "m": map[string]any{}, "z": nil}), true, true, []Format{CBOR, JSON}},
		"unstructured int is int64":       {u(map[string]any{"n": 3}), false, false, []Format{CBOR, JSON}},
		"unstructured []string is []any":  {u(map[string]any{"s": []string{"a"}}), false, false, []Format{CBOR, JSON}},
		"whole float stays float in CBOR": {u(map[string]any{"f": 3.0}), true, true, []Format{CBOR}},
		"whole float becomes int in JSON": {u(map[string]any{"f": 3.0}), false, false, []Format{JSON}},
	} {
		for _, f := range tc.formats {
			c, err := NewCodec(tc.obj, Options{Format: f})
			require.NoError(t, err)
			require.Equal(t, f, c.Format(), name)
			data, err := c.Encode(tc.obj)
			require.NoError(t, err, name)
			got, err := c.Decode(data)
			require.NoError(t, err, name)
			assert.Equal(t, tc.semantic, equality.Semantic.DeepEqual(tc.obj, got), "%s (%v): semantic", name, f)
			assert.Equal(t, tc.exact, reflect.DeepEqual(tc.obj, got), "%s (%v): exact: %s", name, f, objDiff(tc.obj, got))
		}
	}
}

func TestNewCodecNeedsAPrototype(t *testing.T) {
	_, err := NewCodec(nil, Options{})
	assert.ErrorContains(t, err, "prototype")
}

func TestEncodeRefuses(t *testing.T) {
	pods, err := NewCodec(&corev1.Pod{}, Options{})
	require.NoError(t, err)
	_, err = pods.Encode(&corev1.ConfigMap{})
	assert.ErrorIs(t, err, ErrWrongType)
	_, err = pods.Encode(&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v9", Kind: "Pod"}})
	assert.ErrorIs(t, err, ErrKind)

	custom, err := NewCodec(&unstructured.Unstructured{}, Options{})
	require.NoError(t, err)
	_, err = custom.Encode(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}}})
	assert.ErrorIs(t, err, ErrKind)
}

func TestDecodeRejectsBadData(t *testing.T) {
	c, err := NewCodec(&corev1.Pod{}, Options{})
	require.NoError(t, err)
	_, err = c.Decode(Encoding{})
	assert.Error(t, err)
	_, err = c.Decode(mustEncoding(t, 0, 0, []byte{0xff, 0xff}))
	assert.Error(t, err)
	_, err = c.Decode(mustEncoding(t, flagCompressed, 0, []byte{1, 2}))
	assert.ErrorIs(t, err, errNoDictionary, "without a Compressor, compressed means cold")
	_, err = c.Decode(mustEncoding(t, 0, 3, []byte{1, 2}))
	assert.ErrorIs(t, err, ErrWrongType, "another codec's tag")

	comp, err := NewCompressor(flate.BestSpeed, nil)
	require.NoError(t, err)
	cc, err := NewCodec(&corev1.Pod{}, Options{Compressor: comp})
	require.NoError(t, err)
	_, err = cc.Decode(mustEncoding(t, flagCompressed, 0, []byte{0xff, 0xff, 0xff}))
	assert.ErrorContains(t, err, "decompressing")
}

func mustEncoding(t *testing.T, flags byte, tag uint32, body []byte) Encoding {
	e, err := newEncoding(flags, tag, body)
	require.NoError(t, err)
	return e
}

// Encoding a realistic pod allocates what protobuf's generated code
// allocates for it (the strings of its memory quantities, sorted map keys)
// and the encoding's pieces: nothing else, no buffer, no copy. The
// per-event budget in docs/PERFORMANCE.md counts on it.
func TestEncodeAllocationsRealisticPod(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what is put back")
	}
	obj := benchObjects(t)["realistic-pod"]
	c, err := NewCodec(obj, Options{})
	require.NoError(t, err)
	m := obj.(generated)
	buf := make([]byte, m.Size())
	generatedAllocs := testing.AllocsPerRun(50, func() {
		_, _ = m.MarshalToSizedBuffer(buf[:m.Size()])
	})
	encodeAllocs := testing.AllocsPerRun(50, func() { _, _ = c.Encode(obj) })
	t.Logf("encode %.0f allocations, of which protobuf's generated Size and Marshal %.0f", encodeAllocs, generatedAllocs)
	assert.LessOrEqual(t, encodeAllocs-generatedAllocs, 2.0, "the codec's own: the encoding's pieces")
}
