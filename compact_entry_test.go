package cache

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgocache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/fixtures"
)

// TestMeasureEntryOverhead measures, for COMPACT_ENTRY_N small custom
// resources (about 1.5 KB of CBOR each; skipped when unset), the heap of
// client-go's Indexer holding them decoded, of a compact Indexer without
// hot cache, and what the compact Indexer keeps per entry beside the
// encodings (key, map slot, index entries). Run it without -race:
//
//	COMPACT_ENTRY_N=20000 go test -run TestMeasureEntryOverhead -v -count=1 .
func TestMeasureEntryOverhead(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("COMPACT_ENTRY_N"))
	if n <= 0 {
		t.Skip("set COMPACT_ENTRY_N to measure")
	}
	objs := decodedSmallCRs(t, n)
	base := settledHeap()
	cg := clientgocache.NewIndexer(clientgocache.MetaNamespaceKeyFunc, clientgocache.Indexers{NamespaceIndex: MetaNamespaceIndexFunc})
	for _, o := range objs {
		require.NoError(t, cg.Add(o))
	}
	cgStore := settledHeap() - base
	runtime.KeepAlive(cg)
	cg = nil
	objBytes := settledHeap()
	objs = decodedSmallCRs(t, n) // fresh objects, so that none is shared with client-go's
	objBytes = settledHeap() - objBytes

	ours, held := compactEntryHeap(t, objs)
	overhead := float64(ours-held) / float64(n)
	t.Logf("%d small CRs: decoded %.0f B each; client-go Indexer %.0f B/entry (store %.0f B beside the objects)",
		n, float64(objBytes)/float64(n), float64(cgStore+objBytes)/float64(n), float64(cgStore)/float64(n))
	t.Logf("compact, no hot cache: %.0f B/entry = encodings %.0f B + %.1f B per entry of key, slot and index: %.3fx client-go",
		float64(ours)/float64(n), float64(held)/float64(n), overhead, float64(ours)/float64(cgStore+objBytes))
	runtime.KeepAlive(objs)
}

// settledHeap is the heap in use once two collections have run: the
// encoder's pooled buffers survive the first (sync.Pool's victim cache) and
// would otherwise count as the store's, some 100 B per entry at 20k.
func settledHeap() uint64 {
	runtime.GC()
	return liveHeap()
}

// compactEntryHeap fills a compact Indexer without hot cache with objs and
// returns its heap, and the heap of its encodings alone.
func compactEntryHeap(t *testing.T, objs []*unstructured.Unstructured) (store, encodings uint64) {
	// The encodings the map holds, as the form hands them to it; the
	// slice is made before the measurement starts.
	encs := make([]compact.Encoding, 0, len(objs))
	record := func(_ string, held any) { encs = append(encs, held.(compact.Encoding)) }
	before := settledHeap()
	idx := compactRecordingHeld(record)
	for _, o := range objs {
		require.NoError(t, idx.Add(o))
	}
	store = settledHeap() - before
	runtime.KeepAlive(idx)
	idx = nil
	encodings = settledHeap() - before
	runtime.KeepAlive(encs)
	return store, encodings
}

// decodedSmallCRs returns n small custom resources as an informer holds
// them: decoded from their JSON.
func decodedSmallCRs(t *testing.T, n int) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, n)
	for i := range out {
		data, err := fixtures.SmallCustomResource(1, i).MarshalJSON()
		require.NoError(t, err)
		out[i] = &unstructured.Unstructured{}
		require.NoError(t, out[i].UnmarshalJSON(data))
	}
	return out
}
