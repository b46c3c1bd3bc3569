package coldtier

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkCompress and BenchmarkDecompress are the chosen codec on
// realistic pods, as the cold tier uses it: B/pod is the mean record.
func BenchmarkCompress(b *testing.B) {
	benchPods(b, func(d *Dictionary, pod, rec, buf []byte) ([]byte, error) {
		return d.Compress(buf[:0], pod), nil
	})
}

func BenchmarkDecompress(b *testing.B) {
	benchPods(b, func(d *Dictionary, pod, rec, buf []byte) ([]byte, error) {
		return d.Decompress(buf[:0], rec)
	})
}

func benchPods(b *testing.B, op func(d *Dictionary, pod, rec, buf []byte) ([]byte, error)) {
	for _, form := range []string{"managedFields", "stripped"} {
		b.Run(form, func(b *testing.B) {
			d, pods := trained(b, form == "stripped")
			recs := make([][]byte, len(pods))
			var stored int
			for i, p := range pods {
				recs[i] = d.Compress(nil, p)
				stored += len(recs[i])
			}
			buf := make([]byte, 0, 64<<10)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var err error
				if buf, err = op(d, pods[i%len(pods)], recs[i%len(pods)], buf); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(stored)/float64(len(pods)), "B/pod")
		})
	}
}

// BenchmarkTrain is making a DefaultSize dictionary from 200 pods (with
// managedFields) as train-ns (ns/op includes two forced GCs), and the heap
// one Dictionary holds once it has compressed and decompressed a pod
// (dict-heap-B): a cost per informer.
func BenchmarkTrain(b *testing.B) {
	samples := podBodies(b, 1, 0, 200, false)
	var before, after runtime.MemStats
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		d, err := Train(samples, 0)
		b.ReportMetric(float64(time.Since(start).Nanoseconds()), "train-ns")
		if err != nil {
			b.Fatal(err)
		}
		out, err := d.Decompress(nil, d.Compress(nil, samples[0]))
		if err != nil || len(out) == 0 {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc), "dict-heap-B")
		d.Close()
	}
}
