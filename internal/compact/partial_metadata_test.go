package compact

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
)

// partialList is what an API server answers a metadata client's LIST of
// pods with: every item's TypeMeta set to meta.k8s.io's
// PartialObjectMetadata, and metadata as full as real pods carry.
func partialList(n int) *metav1.PartialObjectMetadataList {
	list := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "900"},
	}
	// In the local zone, as client-go's decoders make times.
	created := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.Local))
	for i := range n {
		deleting := metav1.NewTime(created.Add(time.Hour))
		grace := int64(30)
		controller := true
		p := metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("web-7d4b9c8f6-%05d", i), GenerateName: "web-7d4b9c8f6-", Namespace: "prod",
				UID: types.UID(fmt.Sprintf("1f3c6a52-8a4e-4a0e-9a43-%012d", i)), ResourceVersion: fmt.Sprint(100 + i),
				Generation: 3, CreationTimestamp: created,
				Labels:      map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f6", "tier": "frontend"},
				Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-03-01T11:00:00Z", "prometheus.io/scrape": "true"},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6", UID: "9b2f0c3e-1d4a-4c2b-8e7f-0a1b2c3d4e5f",
					Controller: &controller, BlockOwnerDeletion: &controller,
				}},
				Finalizers: []string{"example.com/cleanup", "foregroundDeletion"},
				ManagedFields: []metav1.ManagedFieldsEntry{
					{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created, FieldsType: "FieldsV1",
						FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"9b2f0c3e-1d4a-4c2b-8e7f-0a1b2c3d4e5f\"}":{}}}}`)},
					{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created, FieldsType: "FieldsV1", Subresource: "status",
						FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}},"f:phase":{}}}`)},
				},
			},
		}
		if i%2 == 1 {
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleting, &grace
		}
		list.Items = append(list.Items, p)
	}
	return list
}

// metaScheme registers meta.k8s.io's types, as the API server's does.
func metaScheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(s))
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	return s
}

// asClientGets is the items of list as client-go's metadata client hands
// them to an informer: sent in mediaType, decoded by the client's own
// decoder (metainternalversionscheme's, without conversion), then taken
// out of the list one by one. In JSON the items keep meta.k8s.io's
// TypeMeta; protobuf does not carry it.
func asClientGets(t testing.TB, list *metav1.PartialObjectMetadataList, mediaType string) []*metav1.PartialObjectMetadata {
	var wire []byte
	switch mediaType {
	case runtime.ContentTypeJSON:
		data, err := json.Marshal(list)
		require.NoError(t, err)
		wire = data
	case runtime.ContentTypeProtobuf:
		s := metaScheme(t)
		var buf bytes.Buffer
		require.NoError(t, protobuf.NewSerializer(s, s).Encode(list, &buf))
		wire = buf.Bytes()
	}
	codecs := metainternalversionscheme.Codecs.WithoutConversion()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	require.True(t, ok, mediaType)
	obj, _, err := codecs.DecoderToVersion(info.Serializer, nil).Decode(wire, nil, nil)
	require.NoError(t, err)
	got := obj.(*metav1.PartialObjectMetadataList)
	out := make([]*metav1.PartialObjectMetadata, len(got.Items))
	for i := range got.Items {
		out[i] = &got.Items[i]
	}
	return out
}

// An informer's metadata-only objects come back exactly, TypeMeta
// included, whichever TypeMeta they carry: none (a protobuf response),
// meta.k8s.io's (a JSON response) or the resource's own kind (set by
// controller-runtime, and by client-go's fake), compressed or not, and
// whether or not the scheme registers meta.k8s.io's types: a scheme that
// does would otherwise refuse the resource's kind, or drop TypeMeta in
// protobuf.
func TestPartialObjectMetadataRoundTripsExactly(t *testing.T) {
	kinds := map[string]func(*metav1.PartialObjectMetadata){
		"as sent": func(*metav1.PartialObjectMetadata) {},
		"resource's kind": func(p *metav1.PartialObjectMetadata) {
			p.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
		},
		"custom resource's kind": func(p *metav1.PartialObjectMetadata) {
			p.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
		},
	}
	schemes := map[string]*runtime.Scheme{"client-go's scheme": nil, "a scheme with meta.k8s.io": metaScheme(t)}
	for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		for kindName, setKind := range kinds {
			objs := asClientGets(t, partialList(6), mediaType)
			for _, o := range objs {
				setKind(o)
			}
			for schemeName, s := range schemes {
				for _, format := range []Format{Auto, Protobuf, CBOR, JSON} {
					name := fmt.Sprintf("%s/%s/%s/%v", mediaType, kindName, schemeName, format)
					t.Run(name, func(t *testing.T) {
						requireExactRoundTrips(t, objs, Options{Scheme: s, Format: format})
					})
				}
			}
		}
	}
}

// requireExactRoundTrips encodes and decodes each of objs with a codec
// made with opts, plain and compressed with a dictionary.
func requireExactRoundTrips(t *testing.T, objs []*metav1.PartialObjectMetadata, opts Options) {
	t.Helper()
	plain, err := NewCodec(&metav1.PartialObjectMetadata{}, opts)
	require.NoError(t, err)
	require.Equal(t, JSON, plain.Format(), "PartialObjectMetadata's format")
	var samples [][]byte
	for _, o := range objs {
		e, err := plain.Encode(o)
		require.NoError(t, err)
		samples = append(samples, e.Bytes())
	}
	opts.Compressor, err = NewCompressor(flate.DefaultCompression, Dictionary(samples, 32<<10))
	require.NoError(t, err)
	packed, err := NewCodec(&metav1.PartialObjectMetadata{}, opts)
	require.NoError(t, err)
	for _, c := range []*Codec{plain, packed} {
		for _, o := range objs {
			e, err := c.Encode(o)
			require.NoError(t, err)
			got, err := c.Decode(e)
			require.NoError(t, err)
			if !reflect.DeepEqual(o, got) {
				t.Fatalf("%s: round trip differs: %s", o.Name, objDiff(o, got))
			}
		}
	}
}

// The list type keeps its items' TypeMeta too, though protobuf would drop
// it, and whatever kind its own TypeMeta names.
func TestPartialObjectMetadataListRoundTripsExactly(t *testing.T) {
	list := partialList(3)
	list.Items[1].SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	for _, s := range []*runtime.Scheme{nil, metaScheme(t)} {
		c, err := NewCodec(&metav1.PartialObjectMetadataList{}, Options{Scheme: s})
		require.NoError(t, err)
		e, err := c.Encode(list)
		require.NoError(t, err)
		got, err := c.Decode(e)
		require.NoError(t, err)
		if !reflect.DeepEqual(list, got) {
			t.Errorf("round trip differs: %s", objDiff(list, got))
		}
	}
}

// BenchmarkPartialObjectMetadata decodes a realistic metadata-only pod as
// the codec holds it (JSON, which keeps TypeMeta) and, for reference, as
// protobuf's generated code would (which drops it); each reports the
// bytes held.
func BenchmarkPartialObjectMetadata(b *testing.B) {
	obj := asClientGets(b, partialList(1), runtime.ContentTypeProtobuf)[0]
	c, err := NewCodec(obj, Options{})
	require.NoError(b, err)
	e, err := c.Encode(obj)
	require.NoError(b, err)
	b.Run("codec-json", func(b *testing.B) {
		b.ReportMetric(float64(e.Len()), "held-bytes")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Decode(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	data, err := obj.Marshal()
	require.NoError(b, err)
	b.Run("protobuf-reference", func(b *testing.B) {
		b.ReportMetric(float64(len(data)), "held-bytes")
		b.ReportAllocs()
		for b.Loop() {
			if err := new(metav1.PartialObjectMetadata).Unmarshal(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
