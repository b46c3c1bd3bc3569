package coldtier

import (
	"bytes"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The pods of the tests, made once: generating them is most of the tests'
// time under the race detector. [0] keeps managedFields, [1] drops them.
var (
	samplePods = sync.OnceValue(func() [2][][]byte { return bothForms(1, 0, 30) })
	otherPods  = sync.OnceValue(func() [2][][]byte { return bothForms(1, 1000, 60) })
)

func bothForms(seed uint64, skip, n int) [2][][]byte {
	return [2][][]byte{podBodies(nil, seed, skip, n, false), podBodies(nil, seed, skip, n, true)}
}

func form(stripped bool) int {
	if stripped {
		return 1
	}
	return 0
}

// trained is a Dictionary from 30 realistic pods (managedFields kept or
// not; DefaultSize holds 6 or 16 of them), closed when the test ends, and
// 60 other pods of the same cluster.
func trained(t testing.TB, stripped bool) (*Dictionary, [][]byte) {
	d, err := Train(samplePods()[form(stripped)], 0)
	require.NoError(t, err)
	t.Cleanup(d.Close)
	return d, otherPods()[form(stripped)]
}

func TestRoundTripRealisticPods(t *testing.T) {
	for _, stripped := range []bool{false, true} {
		d, pods := trained(t, stripped)
		for i, p := range pods {
			rec := d.Compress(nil, p)
			back, err := d.Decompress(nil, rec)
			require.NoError(t, err, "pod %d", i)
			require.True(t, bytes.Equal(p, back), "pod %d", i)
		}
	}
}

// TestCompressedSize holds the ratios docs/MEMORY.md reports (the
// fixtures are deterministic, so the sizes are too), with a margin.
func TestCompressedSize(t *testing.T) {
	for _, tc := range []struct {
		stripped bool
		maxRatio float64
	}{{false, 0.09}, {true, 0.17}} {
		d, pods := trained(t, tc.stripped)
		var raw, stored int
		for _, p := range pods {
			raw += len(p)
			stored += len(d.Compress(nil, p))
		}
		ratio := float64(stored) / float64(raw)
		t.Logf("stripped=%v: %d B per pod from %d (%.3fx)", tc.stripped, stored/len(pods), raw/len(pods), ratio)
		assert.LessOrEqual(t, ratio, tc.maxRatio, "stripped=%v", tc.stripped)
	}
}

func TestAppendsToDst(t *testing.T) {
	d, pods := trained(t, true)
	rec := d.Compress([]byte("head"), pods[0])
	require.Equal(t, "head", string(rec[:4]))
	back, err := d.Decompress([]byte("x"), rec[4:])
	require.NoError(t, err)
	require.Equal(t, append([]byte("x"), pods[0]...), back)
}

func TestEmptyAndIncompressible(t *testing.T) {
	d, _ := trained(t, true)
	noise := make([]byte, 1<<20)
	for i := range noise {
		noise[i] = byte(i*7919 + i*i*31 + i>>7)
	}
	// Larger than the encoder's window: 60 pods in one.
	large := bytes.Join(otherPods()[0], nil)
	for _, src := range [][]byte{nil, {}, noise[:5000], noise, large} {
		rec := d.Compress(nil, src)
		assert.LessOrEqual(t, len(rec), MaxRecordLen(len(src)))
		back, err := d.Decompress(nil, rec)
		require.NoError(t, err)
		require.Equal(t, len(src), len(back))
		require.True(t, bytes.Equal(src, back))
	}
}

func TestWrongDictionaryIsRefused(t *testing.T) {
	d1, pods := trained(t, false)
	d2, err := Train(podBodies(t, 2, 0, 10, false), 0)
	require.NoError(t, err)
	defer d2.Close()
	rec := d1.Compress(nil, pods[0])
	_, err = d2.Decompress(nil, rec)
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestOtherVersionIsRefused(t *testing.T) {
	d, pods := trained(t, true)
	rec := d.Compress(nil, pods[0])
	rec[0] = Version + 1
	_, err := d.Decompress(nil, rec)
	require.ErrorIs(t, err, ErrVersion)
	_, err = d.Decompress(nil, nil)
	require.ErrorIs(t, err, ErrVersion)
}

func TestTruncatedRecordIsRefused(t *testing.T) {
	d, pods := trained(t, true)
	rec := d.Compress(nil, pods[0])
	for _, n := range []int{1, 2, 5, len(rec) / 2, len(rec) - 1} {
		_, err := d.Decompress(nil, rec[:n])
		require.ErrorIs(t, err, ErrCorrupt, "first %d bytes", n)
	}
}

// TestLoadKeepsRecordsReadable is a snapshot's cycle: records and the
// dictionary's Bytes saved, a new process loading both.
func TestLoadKeepsRecordsReadable(t *testing.T) {
	d, pods := trained(t, false)
	rec := d.Compress(nil, pods[3])
	loaded, err := Load(d.Bytes())
	require.NoError(t, err)
	defer loaded.Close()
	back, err := loaded.Decompress(nil, rec)
	require.NoError(t, err)
	require.Equal(t, pods[3], back)
	require.Equal(t, rec, loaded.Compress(nil, pods[3]), "the same dictionary compresses to the same record")
	require.Equal(t, d.Size(), loaded.Size())
}

func TestLoadRefusesBadDictionaries(t *testing.T) {
	d, _ := trained(t, true)
	good := d.Bytes()
	otherVersion := bytes.Clone(good)
	otherVersion[0]++
	flipped := bytes.Clone(good)
	flipped[len(flipped)-1] ^= 1
	for name, tc := range map[string]struct {
		data []byte
		want error
	}{
		"empty":         {nil, ErrVersion},
		"short":         {good[:4], ErrVersion},
		"other version": {otherVersion, ErrVersion},
		"no content":    {good[:5], ErrCorrupt},
		"flipped bit":   {flipped, ErrCorrupt},
	} {
		_, err := Load(tc.data)
		assert.ErrorIs(t, err, tc.want, name)
	}
}

func TestTrainNeedsSamples(t *testing.T) {
	_, err := Train(nil, 0)
	require.Error(t, err)
	_, err = Train([][]byte{{}, {}}, 0)
	require.Error(t, err)
}

func TestTrainCapsTheSize(t *testing.T) {
	samples := samplePods()[1]
	d, err := Train(samples, 1000)
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, 1000, d.Size())
	require.Equal(t, samples[0][len(samples[0])-1000:], d.Bytes()[5:], "the first sample ends the dictionary")
}

// TestAllocationBudget: with room in dst, neither direction allocates,
// so the background compressor and cold reads make no garbage of their own.
func TestAllocationBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes pooled state allocate")
	}
	d, pods := trained(t, false)
	rec := d.Compress(nil, pods[0])
	dst := make([]byte, 0, MaxRecordLen(len(pods[0])))
	out := make([]byte, 0, len(pods[0]))
	// Warm the encoder and decoder's pooled state first.
	_, _ = d.Decompress(out, d.Compress(dst, pods[1]))
	assert.Zero(t, testing.AllocsPerRun(50, func() { d.Compress(dst, pods[0]) }), "Compress")
	assert.Zero(t, testing.AllocsPerRun(50, func() {
		if _, err := d.Decompress(out, rec); err != nil {
			t.Fatal(err)
		}
	}), "Decompress")
}

func TestConcurrentUse(t *testing.T) {
	d, pods := trained(t, true)
	done := make(chan error)
	for w := range 4 {
		go func() {
			var err error
			for i := w; i < len(pods) && err == nil; i += 4 {
				var back []byte
				back, err = d.Decompress(nil, d.Compress(nil, pods[i]))
				if err == nil && !bytes.Equal(back, pods[i]) {
					err = assert.AnError
				}
			}
			done <- err
		}()
	}
	for range 4 {
		require.NoError(t, <-done)
	}
}

func FuzzRoundTrip(f *testing.F) {
	samples := samplePods()[1]
	for _, s := range samples[:3] {
		f.Add(s)
	}
	f.Add([]byte{})
	d, err := Train(samples, 8<<10)
	require.NoError(f, err)
	f.Cleanup(d.Close)
	f.Fuzz(func(t *testing.T, src []byte) {
		rec := d.Compress(nil, src)
		if len(rec) > MaxRecordLen(len(src)) {
			t.Fatalf("record of %d bytes from %d, over MaxRecordLen", len(rec), len(src))
		}
		back, err := d.Decompress(nil, rec)
		if err != nil || !bytes.Equal(back, src) {
			t.Fatalf("round trip of %d bytes: %v", len(src), err)
		}
	})
}

// FuzzDecompress: any bytes are refused with an error or decompressed;
// never a panic or an unbounded allocation.
func FuzzDecompress(f *testing.F) {
	samples := samplePods()[1]
	d, err := Train(samples, 8<<10)
	require.NoError(f, err)
	f.Cleanup(d.Close)
	for _, s := range samples[:3] {
		f.Add(d.Compress(nil, s))
	}
	f.Add([]byte{Version})
	f.Fuzz(func(t *testing.T, rec []byte) {
		out, err := d.Decompress(nil, rec)
		if err == nil && len(out) > maxDecoded {
			t.Fatalf("%d bytes out", len(out))
		}
	})
}
