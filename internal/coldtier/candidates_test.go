package coldtier

import (
	"bytes"
	stdflate "compress/flate"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/dict"
	kpflate "github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	corev1 "k8s.io/api/core/v1"

	"github.com/openinformer/cache/internal/fixtures"
)

// The candidates below are the codecs the cold tier was chosen from
// (docs/MEMORY.md "Cold tier codec"); BenchmarkCandidates measures each on
// the protobuf encodings of realistic pods, with a dictionary trained on
// other pods of the same simulated cluster.

// candidate is one codec with a dictionary trained from samples.
type candidate struct {
	name  string
	train func(samples [][]byte) (dictSize int, enc func(dst, src []byte) []byte, dec func(dst, src []byte) ([]byte, error), err error)
}

func zstdCandidate(name string, level zstd.EncoderLevel, size int) candidate {
	return candidate{name: name, train: func(samples [][]byte) (int, func(dst, src []byte) []byte, func(dst, src []byte) ([]byte, error), error) {
		d, err := dict.BuildZstdDict(samples, dict.Options{MaxDictSize: size, HashBytes: 6, ZstdDictID: 40000, ZstdLevel: level})
		if err != nil {
			return 0, nil, nil, err
		}
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderDict(d), zstd.WithEncoderLevel(level), zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return 0, nil, nil, err
		}
		decoder, err := zstd.NewReader(nil, zstd.WithDecoderDicts(d), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return 0, nil, nil, err
		}
		return len(d), func(dst, src []byte) []byte { return enc.EncodeAll(src, dst[:0]) },
			func(dst, src []byte) ([]byte, error) { return decoder.DecodeAll(src, dst[:0]) }, nil
	}}
}

// zstdRawCandidate uses the tail of the concatenated samples as a raw
// content dictionary: no training at all.
func zstdRawCandidate(name string, level zstd.EncoderLevel, size int) candidate {
	return candidate{name: name, train: func(samples [][]byte) (int, func(dst, src []byte) []byte, func(dst, src []byte) ([]byte, error), error) {
		var d []byte
		for i := len(samples) - 1; i >= 0 && len(d) < size; i-- {
			d = append(d, samples[i]...)
		}
		d = d[max(0, len(d)-size):]
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderDictRaw(40000, d), zstd.WithEncoderLevel(level), zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return 0, nil, nil, err
		}
		decoder, err := zstd.NewReader(nil, zstd.WithDecoderDictRaw(40000, d), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return 0, nil, nil, err
		}
		return len(d), func(dst, src []byte) []byte { return enc.EncodeAll(src, dst[:0]) },
			func(dst, src []byte) ([]byte, error) { return decoder.DecodeAll(src, dst[:0]) }, nil
	}}
}

func s2RawCandidate(name string) candidate {
	return candidate{name: name, train: func(samples [][]byte) (int, func(dst, src []byte) []byte, func(dst, src []byte) ([]byte, error), error) {
		var raw []byte
		for i := len(samples) - 1; i >= 0 && len(raw) < s2.MaxDictSize; i-- {
			raw = append(raw, samples[i]...)
		}
		raw = raw[max(0, len(raw)-s2.MaxDictSize):]
		d := s2.MakeDict(raw, nil)
		return len(raw), d.EncodeBetter, d.Decode, nil
	}}
}

func s2Candidate(name string, mode int) candidate {
	return candidate{name: name, train: func(samples [][]byte) (int, func(dst, src []byte) []byte, func(dst, src []byte) ([]byte, error), error) {
		raw, err := dict.BuildS2Dict(samples, dict.Options{MaxDictSize: s2.MaxDictSize, HashBytes: 6})
		if err != nil {
			return 0, nil, nil, err
		}
		d := s2.NewDict(raw)
		encode := [...]func(dst, src []byte) []byte{d.Encode, d.EncodeBetter, d.EncodeBest}[mode]
		return len(raw), encode, d.Decode, nil
	}}
}

func stdFlateCandidate(name string, level, size int) candidate {
	return candidate{name: name, train: func(samples [][]byte) (int, func(dst, src []byte) []byte, func(dst, src []byte) ([]byte, error), error) {
		d, err := dict.BuildRawDict(samples, dict.Options{MaxDictSize: size, HashBytes: 6})
		if err != nil {
			return 0, nil, nil, err
		}
		w, err := stdflate.NewWriterDict(io.Discard, level, d)
		if err != nil {
			return 0, nil, nil, err
		}
		r := stdflate.NewReaderDict(nil, d)
		return len(d), func(dst, src []byte) []byte {
				buf := bytes.NewBuffer(dst[:0])
				w.Reset(buf)
				_, _ = w.Write(src)
				_ = w.Close()
				return buf.Bytes()
			}, func(dst, src []byte) ([]byte, error) {
				if err := r.(stdflate.Resetter).Reset(bytes.NewReader(src), d); err != nil {
					return nil, err
				}
				buf := bytes.NewBuffer(dst[:0])
				_, err := buf.ReadFrom(r)
				return buf.Bytes(), err
			}, nil
	}}
}

func kpFlateCandidate(name string, level, size int) candidate {
	return candidate{name: name, train: func(samples [][]byte) (int, func(dst, src []byte) []byte, func(dst, src []byte) ([]byte, error), error) {
		d, err := dict.BuildRawDict(samples, dict.Options{MaxDictSize: size, HashBytes: 6})
		if err != nil {
			return 0, nil, nil, err
		}
		w, err := kpflate.NewWriterDict(io.Discard, level, d)
		if err != nil {
			return 0, nil, nil, err
		}
		r := kpflate.NewReaderDict(nil, d)
		return len(d), func(dst, src []byte) []byte {
				buf := bytes.NewBuffer(dst[:0])
				w.Reset(buf)
				_, _ = w.Write(src)
				_ = w.Close()
				return buf.Bytes()
			}, func(dst, src []byte) ([]byte, error) {
				if err := r.(kpflate.Resetter).Reset(bytes.NewReader(src), d); err != nil {
					return nil, err
				}
				buf := bytes.NewBuffer(dst[:0])
				_, err := buf.ReadFrom(r)
				return buf.Bytes(), err
			}, nil
	}}
}

func candidates() []candidate {
	if testing.Short() {
		return []candidate{
			zstdRawCandidate("zstd-default-raw64k", zstd.SpeedDefault, 64<<10),
			zstdRawCandidate("zstd-fastest-raw32k", zstd.SpeedFastest, 32<<10),
			zstdRawCandidate("zstd-fastest-raw64k", zstd.SpeedFastest, 64<<10),
			zstdRawCandidate("zstd-fastest-raw128k", zstd.SpeedFastest, 128<<10),
			zstdRawCandidate("zstd-fastest-raw256k", zstd.SpeedFastest, 256<<10),
			s2RawCandidate("s2-better-raw64k"),
		}
	}
	return []candidate{
		zstdCandidate("zstd-fastest-32k", zstd.SpeedFastest, 32<<10),
		zstdCandidate("zstd-default-32k", zstd.SpeedDefault, 32<<10),
		zstdCandidate("zstd-default-64k", zstd.SpeedDefault, 64<<10),
		zstdCandidate("zstd-default-110k", zstd.SpeedDefault, 110<<10),
		zstdCandidate("zstd-better-64k", zstd.SpeedBetterCompression, 64<<10),
		s2Candidate("s2-fast-64k", 0),
		s2Candidate("s2-better-64k", 1),
		s2Candidate("s2-best-64k", 2),
		stdFlateCandidate("stdflate-l2-32k", 2, 32<<10),
		stdFlateCandidate("stdflate-l6-32k", 6, 32<<10),
		kpFlateCandidate("kpflate-l2-32k", 2, 32<<10),
	}
}

// podBodies are the protobuf encodings of n pods from seed, from the first
// pod at skip, as compact storage keeps them; stripped drops managedFields.
func podBodies(tb testing.TB, seed uint64, skip, n int, stripped bool) [][]byte {
	src := fixtures.NewPodSource(seed)
	out := make([][]byte, n)
	for i := range out {
		p := src.Pod(skip + i)
		if stripped {
			p.ManagedFields = nil
		}
		out[i] = marshalPod(tb, p)
	}
	return out
}

// marshalPod is p's protobuf; generated marshaling of a valid pod cannot fail.
func marshalPod(_ testing.TB, p *corev1.Pod) []byte {
	b, err := p.Marshal()
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkCandidates reports, per codec and with or without managedFields:
// train (ns to build the dictionary from 1000 pods, its size as dict-B),
// and encode and decode of held-out pods of the same cluster, with the mean
// stored size as B/pod (raw protobuf is the "none" row).
func BenchmarkCandidates(b *testing.B) {
	for _, stripped := range []bool{false, true} {
		form := "managedFields"
		if stripped {
			form = "stripped"
		}
		train := podBodies(b, 1, 0, 1000, stripped)
		eval := podBodies(b, 1, 1000, 500, stripped)
		var raw int
		for _, e := range eval {
			raw += len(e)
		}
		b.Run(form+"/none", func(b *testing.B) {
			b.ReportMetric(float64(raw)/float64(len(eval)), "B/pod")
		})
		for _, c := range candidates() {
			benchCandidate(b, form+"/"+c.name, c, train, eval)
		}
	}
}

func benchCandidate(b *testing.B, name string, c candidate, train, eval [][]byte) {
	start := time.Now()
	size, enc, dec, err := c.train(train)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	trainTime := time.Since(start)
	compressed := make([][]byte, len(eval))
	var total int
	for i, e := range eval {
		compressed[i] = enc(nil, e)
		total += len(compressed[i])
		back, err := dec(nil, compressed[i])
		if err != nil || !bytes.Equal(back, e) {
			b.Fatalf("%s: round trip of pod %d: %v", name, i, err)
		}
	}
	b.Run(name+"/train", func(b *testing.B) {
		b.ReportMetric(float64(trainTime.Nanoseconds()), "train-ns")
		b.ReportMetric(float64(size), "dict-B")
		b.ReportMetric(float64(total)/float64(len(eval)), "B/pod")
	})
	var buf []byte
	b.Run(name+"/encode", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			buf = enc(buf, eval[i%len(eval)])
			i++
		}
	})
	b.Run(name+"/decode", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			out, err := dec(buf, compressed[i%len(compressed)])
			if err != nil {
				b.Fatal(fmt.Errorf("%s: %w", name, err))
			}
			buf = out
			i++
		}
	})
}
