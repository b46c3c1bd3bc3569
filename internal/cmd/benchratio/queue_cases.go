package main

import (
	"runtime"
	"sort"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"

	cache "github.com/openinformer/cache"
)

// The queue cases compare the informer's default queue (atomic RealFIFO
// with bookmarks and unlock-while-processing) and the gate-off variants.

const (
	queueBenchKeys    = 10_000
	queueBenchRelist  = 100_000
	queueBenchNSCount = 50
)

// queueBenchPods returns n pods spread over queueBenchNSCount namespaces.
func queueBenchPods(n int) []interface{} {
	out := make([]interface{}, n)
	for i := range out {
		out[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace:       "ns-" + strconv.Itoa(i%queueBenchNSCount),
			Name:            "pod-" + strconv.Itoa(i),
			ResourceVersion: "1",
		}}
	}
	return out
}

// queueBenchKnown is a read-only known-objects store, the same for both
// sides, so only the queues are measured.
type queueBenchKnown struct {
	keys []string
	objs map[string]interface{}
}

func newQueueBenchKnown(objs []interface{}) *queueBenchKnown {
	k := &queueBenchKnown{objs: make(map[string]interface{}, len(objs))}
	for _, o := range objs {
		key, _ := clientcache.MetaNamespaceKeyFunc(o)
		k.keys = append(k.keys, key)
		k.objs[key] = o
	}
	sort.Strings(k.keys)
	return k
}

func (k *queueBenchKnown) ListKeys() []string { return k.keys }

func (k *queueBenchKnown) GetByKey(key string) (interface{}, bool, error) {
	o, ok := k.objs[key]
	return o, ok, nil
}

// queueBenchQueue is what both libraries' queues offer.
type queueBenchQueue interface {
	clientcache.Queue
	PopBatch(clientcache.ProcessBatchFunc, clientcache.PopProcessFunc) error
}

func oursDefaultQueue() queueBenchQueue {
	return cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{AtomicEvents: true, EmitDeltaTypeBookmark: true, UnlockWhileProcessing: true})
}

func theirsDefaultQueue() queueBenchQueue {
	return clientcache.NewRealFIFOWithOptions(clientcache.RealFIFOOptions{AtomicEvents: true, EmitDeltaTypeBookmark: true, UnlockWhileProcessing: true})
}

func queueBenchNop(interface{}, bool) error { return nil }

func queueBenchNopBatch([]clientcache.Delta, bool) error { return nil }

// benchAddPopBursts adds keys in bursts of 10k distinct objects and pops
// each burst empty; one op is one Add plus one Pop.
func benchAddPopBursts(newQueue func() queueBenchQueue) func(b *testing.B) {
	return func(b *testing.B) {
		pods := queueBenchPods(queueBenchKeys)
		q := newQueue()
		b.ReportAllocs()
		b.ResetTimer()
		for done := 0; done < b.N; {
			n := min(queueBenchKeys, b.N-done)
			for i := 0; i < n; i++ {
				if err := q.Add(pods[i]); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < n; i++ {
				if _, err := q.Pop(queueBenchNop); err != nil {
					b.Fatal(err)
				}
			}
			done += n
		}
	}
}

// benchAddPopSteady alternates Add and Pop, the queue of a keeping-up
// consumer; one op is one Add plus one Pop.
func benchAddPopSteady(newQueue func() queueBenchQueue) func(b *testing.B) {
	return func(b *testing.B) {
		pods := queueBenchPods(queueBenchKeys)
		q := newQueue()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := q.Update(pods[i%queueBenchKeys]); err != nil {
				b.Fatal(err)
			}
			if _, err := q.Pop(queueBenchNop); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchPopBatch adds 10k distinct objects and drains them with PopBatch;
// one op is one delta.
func benchPopBatch(newQueue func() queueBenchQueue) func(b *testing.B) {
	return func(b *testing.B) {
		pods := queueBenchPods(queueBenchKeys)
		q := newQueue()
		b.ReportAllocs()
		b.ResetTimer()
		for done := 0; done < b.N; {
			n := min(queueBenchKeys, b.N-done)
			for i := 0; i < n; i++ {
				if err := q.Add(pods[i]); err != nil {
					b.Fatal(err)
				}
			}
			for popped := 0; popped < n; {
				err := q.PopBatch(func(ds []clientcache.Delta, _ bool) error {
					popped += len(ds)
					return nil
				}, func(interface{}, bool) error {
					popped++
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			done += n
		}
	}
}

// benchRelist replaces a queue that feeds a store of 100k objects with a
// fresh list of the same objects and drains it, one op per relist. It also
// reports the heap the new queue retains right after Replace (the list
// itself is shared and not counted).
func benchRelist(newQueue func(known clientcache.KeyListerGetter) queueBenchQueue) func(b *testing.B) {
	return func(b *testing.B) {
		pods := queueBenchPods(queueBenchRelist)
		known := newQueueBenchKnown(pods)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			measure := i == 0
			var before runtime.MemStats
			if measure {
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
			}
			q := newQueue(known)
			if err := q.Replace(pods, "2"); err != nil {
				b.Fatal(err)
			}
			if measure {
				b.StopTimer()
				var after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "retained-B")
				runtime.KeepAlive(q)
				b.StartTimer()
			}
			queueBenchDrain(b, q)
		}
	}
}

// queueBenchDrain pops until the queue is empty; the queue is closed first
// so that the last Pop returns instead of waiting.
func queueBenchDrain(b *testing.B, q queueBenchQueue) {
	q.Close()
	for {
		err := q.PopBatch(queueBenchNopBatch, queueBenchNop)
		if err == clientcache.ErrFIFOClosed {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// queueBenchPopOnly gives a DeltaFIFO the PopBatch the shared cases use,
// popping one key at a time.
type queueBenchPopOnly struct{ clientcache.Queue }

func (q queueBenchPopOnly) PopBatch(_ clientcache.ProcessBatchFunc, single clientcache.PopProcessFunc) error {
	_, err := q.Pop(single)
	return err
}

func init() {
	register(
		benchCase{Name: "queue/RealFIFO-default/add+pop-bursts-10k",
			Ours: benchAddPopBursts(oursDefaultQueue), Theirs: benchAddPopBursts(theirsDefaultQueue)},
		benchCase{Name: "queue/RealFIFO-default/add+pop-steady",
			Ours: benchAddPopSteady(oursDefaultQueue), Theirs: benchAddPopSteady(theirsDefaultQueue)},
		benchCase{Name: "queue/RealFIFO-default/popbatch-10k",
			Ours: benchPopBatch(oursDefaultQueue), Theirs: benchPopBatch(theirsDefaultQueue)},
		benchCase{Name: "queue/RealFIFO-default/relist-100k",
			Ours:   benchRelist(func(clientcache.KeyListerGetter) queueBenchQueue { return oursDefaultQueue() }),
			Theirs: benchRelist(func(clientcache.KeyListerGetter) queueBenchQueue { return theirsDefaultQueue() })},
		benchCase{Name: "queue/RealFIFO-nonatomic/relist-100k",
			Ours: benchRelist(func(k clientcache.KeyListerGetter) queueBenchQueue {
				return cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KnownObjects: k})
			}),
			Theirs: benchRelist(func(k clientcache.KeyListerGetter) queueBenchQueue {
				return clientcache.NewRealFIFOWithOptions(clientcache.RealFIFOOptions{KnownObjects: k})
			})},
		benchCase{Name: "queue/DeltaFIFO/relist-100k",
			Ours: benchRelist(func(k clientcache.KeyListerGetter) queueBenchQueue {
				return queueBenchPopOnly{cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KnownObjects: k, EmitDeltaTypeReplaced: true})}
			}),
			Theirs: benchRelist(func(k clientcache.KeyListerGetter) queueBenchQueue {
				return queueBenchPopOnly{clientcache.NewDeltaFIFOWithOptions(clientcache.DeltaFIFOOptions{KnownObjects: k, EmitDeltaTypeReplaced: true})}
			})},
		benchCase{Name: "queue/DeltaFIFO/add+pop-bursts-10k",
			Ours: benchAddPopBursts(func() queueBenchQueue {
				return queueBenchPopOnly{cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{})}
			}),
			Theirs: benchAddPopBursts(func() queueBenchQueue {
				return queueBenchPopOnly{clientcache.NewDeltaFIFOWithOptions(clientcache.DeltaFIFOOptions{})}
			})},
	)
}
