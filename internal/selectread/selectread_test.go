package selectread

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	clientgo "k8s.io/client-go/tools/cache"

	ours "github.com/openinformer/cache"
	"github.com/openinformer/cache/internal/fixtures"
)

const namespace = "big"

// bigNamespace is n realistic pods in one namespace, and a selector that
// returns 1% of them when n is 10000: four of the 400 deployments, 25 pods
// each.
func bigNamespace(tb testing.TB, n int) ([]*corev1.Pod, labels.Selector) {
	pods := fixtures.Pods(3, n)
	for _, p := range pods {
		p.Namespace = namespace
	}
	sel, err := labels.Parse("app.kubernetes.io/instance in (" + pods[0].Labels["app.kubernetes.io/instance"] + "," +
		pods[1].Labels["app.kubernetes.io/instance"] + "," + pods[2].Labels["app.kubernetes.io/instance"] + "," +
		pods[3].Labels["app.kubernetes.io/instance"] + ")")
	require.NoError(tb, err)
	return pods, sel
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func decodePod(data []byte) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	return p, p.Unmarshal(data)
}

func entriesOf(tb testing.TB, pods []*corev1.Pod) []*Entry[corev1.Pod] {
	var in Interner
	out := make([]*Entry[corev1.Pod], len(pods))
	for i, p := range pods {
		data, err := p.Marshal()
		require.NoError(tb, err)
		out[i] = NewEntry[corev1.Pod](data, in.Intern(p.Labels))
	}
	return out
}

func TestSelectReturnsWhatTheListerReturns(t *testing.T) {
	pods, sel := bigNamespace(t, 800)
	idx := clientgo.NewIndexer(clientgo.MetaNamespaceKeyFunc, clientgo.Indexers{clientgo.NamespaceIndex: clientgo.MetaNamespaceIndexFunc})
	for _, p := range pods {
		require.NoError(t, idx.Add(p))
	}
	want, err := corelisters.NewPodLister(idx).Pods(namespace).List(sel)
	require.NoError(t, err)
	var got []*corev1.Pod
	entries := entriesOf(t, pods)
	require.NoError(t, Select(entries, sel, decodePod, func(p *corev1.Pod) { got = append(got, p) }))
	require.ElementsMatch(t, names(want), names(got))
	require.Len(t, got, 8)

	// Held objects are shared; dropped ones are decoded again.
	again := entries[0]
	first, err := again.Object(decodePod)
	require.NoError(t, err)
	second, err := again.Object(decodePod)
	require.NoError(t, err)
	require.Same(t, first, second)
	runtime.KeepAlive(first)
}

// TestLabelSetsAreShared: a ReplicaSet's pods share one LabelSet.
func TestLabelSetsAreShared(t *testing.T) {
	pods, _ := bigNamespace(t, 800)
	entries := entriesOf(t, pods)
	require.Same(t, entries[0].Labels(), entries[400].Labels())
	require.NotSame(t, entries[0].Labels(), entries[1].Labels())
	require.Equal(t, pods[5].Labels["app"], entries[5].Labels().Get("app"))
	require.False(t, entries[5].Labels().Has("absent"))
}

// The benchmarks: a label-selector list returning 1% of a 10k-pod
// namespace, and a full list of it, through client-go's generated pod
// lister on client-go's indexer and on ours compact (today's read path),
// and through Select ("held": the previous result is still held by
// readers; "dropped": every object decoded anew).
func BenchmarkSelectOnePercent(b *testing.B) { benchReads(b, false) }

func BenchmarkFullList(b *testing.B) { benchReads(b, true) }

func benchReads(b *testing.B, full bool) {
	pods, sel := bigNamespace(b, 10000)
	if full {
		sel = labels.Everything()
	}
	cg := clientgo.NewIndexer(clientgo.MetaNamespaceKeyFunc, clientgo.Indexers{clientgo.NamespaceIndex: clientgo.MetaNamespaceIndexFunc})
	compact := ours.NewCompactIndexer(ours.MetaNamespaceKeyFunc, ours.Indexers{ours.NamespaceIndex: ours.MetaNamespaceIndexFunc},
		ours.CompactOptions{HotObjects: ours.DefaultHotObjects})
	for _, p := range pods {
		require.NoError(b, cg.Add(p))
		require.NoError(b, compact.Add(p.DeepCopy()))
	}
	for name, idx := range map[string]clientgo.Indexer{"client-go": cg, "compact-today": compact} {
		lister := corelisters.NewPodLister(idx).Pods(namespace)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := lister.List(sel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	entries := entriesOf(b, pods)
	for _, held := range []bool{true, false} {
		name := "select-dropped"
		if held {
			name = "select-held"
		}
		b.Run(name, func(b *testing.B) {
			var last []*corev1.Pod
			if held { // the objects a reader still holds from an earlier read
				require.NoError(b, Select(entries, sel, decodePod, func(p *corev1.Pod) { last = append(last, p) }))
			}
			b.ReportAllocs()
			for b.Loop() {
				if !held {
					for _, e := range entries {
						e.decoded.Store(nil)
					}
				}
				out := last[:0:0]
				if err := Select(entries, sel, decodePod, func(p *corev1.Pod) { out = append(out, p) }); err != nil {
					b.Fatal(err)
				}
				last = out
			}
			runtime.KeepAlive(last)
		})
	}
}

// BenchmarkLabelMemory reports what labels kept per entry cost: heap
// bytes per pod of 10k entries' interned LabelSets (and the entries'
// pointers to them), next to a labels.Set copied per pod.
func BenchmarkLabelMemory(b *testing.B) {
	pods, _ := bigNamespace(b, 10000)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var in Interner
		sets := make([]*LabelSet, len(pods))
		for i, p := range pods {
			sets[i] = in.Intern(p.Labels)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(pods)), "interned-B/pod")
		runtime.KeepAlive(sets)
		runtime.GC()
		runtime.ReadMemStats(&before)
		copies := make([]labels.Set, len(pods))
		for i, p := range pods {
			copies[i] = labels.Set(maps(p.Labels))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(pods)), "map-B/pod")
		runtime.KeepAlive(copies)
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string([]byte(v))
	}
	return out
}
