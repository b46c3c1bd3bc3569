package main

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/fixtures"
)

const (
	// namespacePods is the size of the namespace ByIndex reads, as the issue
	// states its goal.
	namespacePods = 1000
	// rounds is how often each timing repeats; medians are reported.
	rounds = 15
)

// measureTimings reads one namespace of 1000 pods: client-go's ByIndex plus
// the deep copy controller-runtime makes of every object it returns, against
// decoding every object from compact bytes (cold) and taking it from a hot
// cache (hot); and the time to decode and encode one pod.
func measureTimings(src *source) (result, error) {
	r := result{Variant: timingVariant, Objects: namespacePods}
	objs := make([]runtime.Object, namespacePods)
	for j := range objs {
		// Pod j lives in namespace j%Namespaces: these are all of team-00.
		objs[j] = src.wire(j * fixtures.Namespaces)
	}
	ns := fixtures.NamespaceName(0)

	idx := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{
		clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			return r, err
		}
	}
	var stores [4]*byteStore
	for i, s := range []struct {
		comp  compression
		strip bool
	}{{compressNone, false}, {compressPlain, false}, {compressDict, false}, {compressNone, true}} {
		var err error
		if stores[i], err = storeOf(src, objs, s.comp, s.strip); err != nil {
			return r, err
		}
	}
	plain, deflated, dict, stripped := stores[0], stores[1], stores[2], stores[3]
	hot := compact.NewHotCache[runtime.Object](2 * namespacePods)
	plain.readNamespace(ns, hot, nil)
	deepCopy := func(o runtime.Object) { _ = o.DeepCopyObject() }
	// The cases alternate within each round, so that a neighbour's burst of
	// load on a shared machine lands on all of them alike.
	t := interleaved(rounds,
		func() {
			list, _ := idx.ByIndex(clientcache.NamespaceIndex, ns)
			for _, o := range list {
				deepCopy(o.(runtime.Object))
			}
		},
		func() { plain.readNamespace(ns, nil, nil) },
		func() { deflated.readNamespace(ns, nil, nil) },
		func() { dict.readNamespace(ns, nil, nil) },
		func() { plain.readNamespace(ns, hot, deepCopy) },
	)
	clientGo := t[0]
	r.Extra = append(r.Extra,
		figure{"ByIndex 1000 pods: client-go + DeepCopy (controller-runtime)", ms(clientGo), "ms"},
		figure{"ByIndex 1000 pods: compact protobuf, cold (decode each)", ms(t[1]), "ms"},
		figure{"  ratio cold / client-go+DeepCopy", ratio(t[1], clientGo), "x"},
		figure{"ByIndex 1000 pods: compact protobuf+deflate, cold", ms(t[2]), "ms"},
		figure{"  ratio cold (deflate) / client-go+DeepCopy", ratio(t[2], clientGo), "x"},
		figure{"ByIndex 1000 pods: compact protobuf+deflate+dict, cold", ms(t[3]), "ms"},
		figure{"  ratio cold (deflate+dict) / client-go+DeepCopy", ratio(t[3], clientGo), "x"},
		figure{"ByIndex 1000 pods: compact, hot cache hits + DeepCopy", ms(t[4]), "ms"},
		figure{"  ratio hot+DeepCopy / client-go+DeepCopy", ratio(t[4], clientGo), "x"},
	)
	for _, s := range []struct {
		name  string
		store *byteStore
	}{{"protobuf", plain}, {"protobuf+deflate", deflated}, {"protobuf+deflate+dict", dict}, {"stripped protobuf", stripped}} {
		p50, p99 := s.store.decodePercentiles()
		r.Extra = append(r.Extra, figure{"decode one pod, " + s.name + ", p50", p50, "us"},
			figure{"decode one pod, " + s.name + ", p99", p99, "us"})
	}
	for _, s := range []struct {
		name  string
		store *byteStore
	}{{"protobuf", plain}, {"protobuf+deflate", deflated}, {"protobuf+deflate+dict", dict}} {
		p50, p99 := s.store.encodePercentiles(objs)
		r.Extra = append(r.Extra, figure{"encode one pod, " + s.name + ", p50", p50, "us"},
			figure{"encode one pod, " + s.name + ", p99", p99, "us"})
	}
	return r, nil
}

func storeOf(src *source, objs []runtime.Object, comp compression, strip bool) (*byteStore, error) {
	store, err := newByteStore(src, compact.Auto, strip, comp)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if strip {
			o = stripped(o.DeepCopyObject())
		}
		if err := store.add(o); err != nil {
			return nil, err
		}
	}
	return store, nil
}

// readNamespace decodes every object of namespace ns, through hot when set;
// a hit is passed to onHit, as a reader sharing hot objects must copy them
// before handing them out.
func (b *byteStore) readNamespace(ns string, hot *compact.HotCache[runtime.Object], onHit func(runtime.Object)) {
	for _, key := range b.byNamespace[ns] {
		data := b.items[key]
		if hot != nil {
			if obj, ok := hot.Get(key, data.Identity()); ok {
				if onHit != nil {
					onHit(obj)
				}
				continue
			}
		}
		obj, err := b.codec.Decode(data)
		if err != nil {
			panic(err)
		}
		if hot != nil {
			hot.Put(key, data.Identity(), obj)
		}
	}
}

// decodePercentiles times decoding each stored object, five times over, and
// returns the 50th and 99th percentiles in microseconds.
func (b *byteStore) decodePercentiles() (float64, float64) {
	var samples []time.Duration
	for range 5 {
		for _, data := range b.items {
			start := time.Now()
			if _, err := b.codec.Decode(data); err != nil {
				panic(err)
			}
			samples = append(samples, time.Since(start))
		}
	}
	return percentiles(samples)
}

func (b *byteStore) encodePercentiles(objs []runtime.Object) (float64, float64) {
	samples := make([]time.Duration, 0, len(objs))
	for _, o := range objs {
		start := time.Now()
		if _, err := b.codec.Encode(o); err != nil {
			panic(err)
		}
		samples = append(samples, time.Since(start))
	}
	return percentiles(samples)
}

func percentiles(samples []time.Duration) (float64, float64) {
	slices.Sort(samples)
	at := func(q float64) float64 { return float64(samples[int(q*float64(len(samples)-1))].Nanoseconds()) / 1e3 }
	return at(0.50), at(0.99)
}

// interleaved runs each of fs once per round, in turn, and returns the
// median time of each.
func interleaved(n int, fs ...func()) []time.Duration {
	times := make([][]time.Duration, len(fs))
	for range n {
		for i, f := range fs {
			start := time.Now()
			f()
			times[i] = append(times[i], time.Since(start))
		}
	}
	out := make([]time.Duration, len(fs))
	for i, ts := range times {
		slices.Sort(ts)
		out[i] = ts[n/2]
	}
	return out
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
