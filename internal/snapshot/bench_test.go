package snapshot

import (
	"io"
	"path/filepath"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/fixtures"
)

// benchPods is how many pods the benchmarks snapshot: the 100k.
const benchPods = 100_000

// podRecords returns the keys and compact protobuf encodings of benchPods
// realistic pods, built once: what a compact pod store would write.
var podRecords = sync.OnceValues(func() ([]string, [][]byte) {
	codec, err := compact.NewCodec(&corev1.Pod{}, compact.Options{})
	if err != nil {
		panic(err)
	}
	src := fixtures.NewPodSource(1)
	keys, values := make([]string, benchPods), make([][]byte, benchPods)
	for i := range keys {
		p := src.Pod(i)
		e, err := codec.Encode(p)
		if err != nil {
			panic(err)
		}
		keys[i], values[i] = p.Namespace+"/"+p.Name, e.Bytes()
	}
	return keys, values
})

func writePods(b *testing.B, path string) int64 {
	keys, values := podRecords()
	h := testHeader(len(keys))
	w, err := Create(path, h)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for i, k := range keys {
		if err := w.Add(k, values[i]); err != nil {
			b.Fatal(err)
		}
		n += int64(len(k) + len(values[i]))
	}
	if err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkWrite100kPods writes a snapshot of 100k compact pods, synced
// and renamed; bytes/s counts keys and values.
func BenchmarkWrite100kPods(b *testing.B) {
	podRecords()
	path := filepath.Join(b.TempDir(), "snap")
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	for b.Loop() {
		n = writePods(b, path)
	}
	b.SetBytes(n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchPods, "ns/object")
}

// BenchmarkRead100kPods reads and verifies a snapshot of 100k compact pods,
// copying nothing (a loader copies each value once, into its encoding).
func BenchmarkRead100kPods(b *testing.B) {
	path := filepath.Join(b.TempDir(), "snap")
	n := writePods(b, path)
	h := testHeader(benchPods)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := Open(path, &h)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		r.Close()
	}
	b.SetBytes(n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchPods, "ns/object")
}

// BenchmarkDecode100kPods decodes the 100k pods' protobuf one by one, the
// least a client does with a cold LIST's body and what a plain store's load
// adds to BenchmarkRead100kPods; a compact store's load adds none of it.
func BenchmarkDecode100kPods(b *testing.B) {
	_, values := podRecords()
	var p corev1.Pod
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, v := range values {
			p.Reset()
			if err := p.Unmarshal(v); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchPods, "ns/object")
}
