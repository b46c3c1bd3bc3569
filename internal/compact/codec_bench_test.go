package compact

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openinformer/cache/internal/fixtures"
)

// tinyPod is the pod of the informer events benchmark: a namespace, a
// name, a resource version and one label.
func tinyPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-1", Name: "pod-1", ResourceVersion: "12345",
		Labels: map[string]string{"app": "app-1"}}}
}

// benchObjects are a realistic pod as an informer holds it and a tiny one.
func benchObjects(b testing.TB) map[string]runtime.Object {
	return map[string]runtime.Object{
		"realistic-pod": fromWire(b, fixtures.Pods(17, 1)[0]),
		"tiny-pod":      tinyPod(),
	}
}

func BenchmarkEncode(b *testing.B) {
	benchCodec(b, func(c *Codec, obj runtime.Object, _ Encoding) error {
		_, err := c.Encode(obj)
		return err
	})
}

func BenchmarkDecode(b *testing.B) {
	benchCodec(b, func(c *Codec, _ runtime.Object, e Encoding) error {
		_, err := c.Decode(e)
		return err
	})
}

// benchCodec times op on each of benchObjects, and on an unstructured
// custom resource of ~10 KB (CBOR), with its codec and encoding.
func benchCodec(b *testing.B, op func(*Codec, runtime.Object, Encoding) error) {
	objs := benchObjects(b)
	objs["custom-resource"] = fromWire(b, fixtures.CustomResources(17, 1)[0])
	for name, obj := range objs {
		c, err := NewCodec(obj, Options{})
		if err != nil {
			b.Fatal(err)
		}
		e, err := c.Encode(obj)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := op(c, obj, e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
