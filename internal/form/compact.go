package form

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/labelset"
)

// Compact is the Form of compact storage: the map holds each
// object as its encoding, and reads decode it, outside the store's lock,
// unless the hot cache still has the object decoded from those very bytes.
type Compact struct {
	// codecs maps an object's Go type to its *compact.Codec. Informers
	// store one type, but a standalone Indexer may be given several.
	codecs sync.Map
	// byTag is every codec made, by its tag (its position), which each
	// encoding carries: the map then holds an object as its
	// compact.Encoding alone, a pointer that an interface holds without
	// allocating. The first codec's tag, 0, costs its encodings no byte.
	// Appended to under mu, read without it.
	byTag atomic.Pointer[[]*compact.Codec]
	mu    sync.Mutex
	// hot is nil when the options turn the hot cache off.
	hot *compact.HotCache[any]
	// labels keeps each encoding's labels for selectors to match, and the
	// cold tier's reference bits.
	labels *heldLabels
	// cold is nil without a cold tier (NewColdCompact).
	cold *coldTier
	// reads counts the views, by how they were answered (Stats).
	reads struct{ hot, plain, cold atomic.Uint64 }
}

// NewCompact returns a compact form whose hot cache keeps up to
// hotObjects decoded objects; none when hotObjects is not positive.
func NewCompact(hotObjects int) *Compact {
	f := &Compact{labels: newHeldLabels()}
	if hotObjects > 0 {
		f.hot = compact.NewHotCache[any](hotObjects)
	}
	return f
}

// Hold encodes obj. The caller's object itself goes into the hot cache, so
// that reading it back soon after the write, and the old object of the next
// update, cost no decode and are the very object that was written, as in
// the default mode.
func (f *Compact) Hold(key string, obj any) (any, error) {
	if e, ok := obj.(compact.Encoding); ok {
		// Held ahead of a Replace (the store's Preheld): adopted as it is.
		f.labels.adopt(key, e)
		return e, nil
	}
	codec, data, err := f.encode(key, obj)
	if err != nil {
		return nil, err
	}
	data = f.holdBudgeted(codec, data, false)
	if f.hot != nil {
		f.hot.Put(key, data.Identity(), obj)
	}
	f.labels.put(key, data, obj)
	return data, nil
}

// HoldAhead encodes obj for a watch-list's buffer (the store's Preheld) and
// leaves the hot cache alone: a stream's objects are handed out only once
// the list is whole, in the order they came, so a hot cache smaller than
// the list would keep the last ones decoded through the whole sync (more
// for the collector to mark) and evict them before the fan-out reached
// them. Measured in docs/PERFORMANCE.md (issue 28, sync).
func (f *Compact) HoldAhead(key string, obj any) (any, error) {
	codec, data, err := f.encode(key, obj)
	if err != nil {
		return nil, err
	}
	data = f.holdBudgeted(codec, data, true)
	f.labels.put(key, data, obj)
	return data, nil
}

// encode is obj's encoding, made by its type's codec, which it returns
// too.
func (f *Compact) encode(key string, obj any) (*compact.Codec, compact.Encoding, error) {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return nil, compact.Encoding{}, fmt.Errorf("compact storage keeps API objects (runtime.Object) only, not %T (key %q)", obj, key)
	}
	codec, err := f.codecFor(ro)
	if err != nil {
		return nil, compact.Encoding{}, fmt.Errorf("compact storage cannot keep %q: %w", key, err)
	}
	data, err := codec.Encode(ro)
	if err != nil {
		return nil, compact.Encoding{}, fmt.Errorf("compact storage cannot keep %q: %w", key, err)
	}
	return codec, data, nil
}

// codecFor returns the codec for obj's Go type, made on first use with the
// next tag.
func (f *Compact) codecFor(obj runtime.Object) (*compact.Codec, error) {
	t := reflect.TypeOf(obj)
	if c, ok := f.codecs.Load(t); ok {
		return c.(*compact.Codec), nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.codecs.Load(t); ok {
		return c.(*compact.Codec), nil
	}
	var codecs []*compact.Codec
	if p := f.byTag.Load(); p != nil {
		codecs = *p
	}
	c, err := compact.NewCodec(obj, compact.Options{Tag: uint32(len(codecs))})
	if err != nil {
		return nil, err
	}
	codecs = append(codecs[:len(codecs):len(codecs)], c)
	f.byTag.Store(&codecs)
	f.codecs.Store(t, c)
	return c, nil
}

// codecOf returns the codec that made e.
func (f *Compact) codecOf(e compact.Encoding) (*compact.Codec, error) {
	tag := compact.TagOf(e)
	if p := f.byTag.Load(); p != nil && int(tag) < len(*p) {
		return (*p)[tag], nil
	}
	return nil, fmt.Errorf("no codec of tag %d", tag)
}

// View returns the hot cache's object for held's bytes or a fresh decode of
// them, which goes into the hot cache if keep, unless a writer has put the
// key there (the bytes being viewed may be older than the writer's). An
// update's old object is viewed without keep: the write puts the new object
// in its place at once.
func (f *Compact) View(key string, held any, keep bool) (any, error) {
	e, ok := held.(compact.Encoding)
	if !ok {
		return nil, fmt.Errorf("compact storage: %q holds a %T, not an encoding", key, held)
	}
	if keep && f.cold != nil {
		f.labels.touch(key, e)
	}
	if f.hot != nil {
		if obj, ok := f.hotRead(key, e, keep); ok {
			f.reads.hot.Add(1)
			return obj, nil
		}
	}
	obj, err := f.decode(e)
	if err != nil {
		return nil, fmt.Errorf("compact storage cannot read %q back: %w", key, err)
	}
	if keep && f.hot != nil {
		f.hot.Offer(key, e.Identity(), obj)
	}
	f.labels.offer(key, e, obj)
	return obj, nil
}

// hotRead is the hot cache's object for key's encoding e; an update's old
// object (not keep) is taken, so that the cache keeps one version of the
// key once the write has it.
func (f *Compact) hotRead(key string, e compact.Encoding, keep bool) (any, bool) {
	if keep {
		return f.hot.Get(key, e.Identity())
	}
	return f.hot.TakeOld(key, e.Identity())
}

// Labels returns the labels of held, key's encoding, when they were kept
// at its write or at a read since.
func (f *Compact) Labels(key string, held any) (*labelset.Set, bool) {
	e, ok := held.(compact.Encoding)
	if !ok {
		return nil, false
	}
	return f.labels.get(key, e)
}

// decode decodes e with the codec that made it, counted by e's tier.
func (f *Compact) decode(e compact.Encoding) (runtime.Object, error) {
	codec, err := f.codecOf(e)
	if err != nil {
		return nil, err
	}
	if codec.Cold(e) {
		f.reads.cold.Add(1)
	} else {
		f.reads.plain.Add(1)
	}
	return codec.Decode(e)
}

// InPlace is false: the map holds encodings.
func (*Compact) InPlace() bool { return false }

// Drop forgets key's decoded object and labels, so that neither keeps a
// deleted object's memory alive.
func (f *Compact) Drop(key string) {
	if f.hot != nil {
		f.hot.Delete(key)
	}
	f.labels.drop(key)
}

// RecordCodec is the form's own codec of example's type, whose tag the
// encodings it holds carry: held values are written as they are.
func (f *Compact) RecordCodec(example runtime.Object) (*compact.Codec, bool, error) {
	c, err := f.codecFor(example)
	return c, true, err
}
