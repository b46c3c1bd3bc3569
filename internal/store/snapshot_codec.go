package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openinformer/cache/internal/compact"
	"github.com/openinformer/cache/internal/objmeta"
	"github.com/openinformer/cache/internal/snapshot"
)

// This file is the store's side of a warm restart (docs/RESTART.md): how a
// frozen store is written to a restart snapshot, and how a snapshot is read
// back into a staged content that a Replace adopts.
//
// A value is the record's index values, then the record:
//
//	uvarint frame length | frame | compact record (flags, body)
//	frame: per framed index, uvarint count, then count × (uvarint length, value)
//
// The framed indexes are the store's indexes other than namespace indexes,
// whose values come from the key; their names, sorted, are part of the
// header's encoding, so a snapshot framed for other indexes is refused
// rather than trusted.

// Snapshots writes and reads one store's restart snapshots (the files of
// a warm restart). Its fields are set once, before the informer runs.
type Snapshots struct {
	m *Map
	// codec encodes a plain store's objects and decodes its records; for
	// a compact store it is the form's own codec of the type, whose tag
	// loaded encodings carry.
	codec *compact.Codec
	// encoded says the store holds the codec's encodings.
	encoded bool
	// suffix ends the header's encoding after the framed index names.
	suffix string
}

// NewSnapshots prepares m for snapshots of objects of example's type.
// variant names what else shapes the cached objects (stripped managed
// fields, the user's Version).
func NewSnapshots(m *Map, example runtime.Object, variant string) (*Snapshots, error) {
	st := &Snapshots{m: m, suffix: variant}
	var err error
	if st.codec, st.encoded, err = m.form.RecordCodec(example); err != nil {
		return nil, fmt.Errorf("no compact codec for %T: %w", example, err)
	}
	return st, nil
}

// Encoding is the header's encoding for a store indexed by set.
func (st *Snapshots) Encoding(set *IndexerSet) string {
	name := fmt.Sprintf("compact/%s/%d%s", st.codec.Format(), compact.RecordVersion, st.suffix)
	if framed := FramedIndexes(set); len(framed) > 0 {
		names := make([]string, len(framed))
		for i, pos := range framed {
			names[i] = set.names[pos]
		}
		name += ";idx=" + strings.Join(names, ",")
	}
	return name
}

// FramedIndexes returns the positions in set of the indexes whose values a
// value frames, in the order of their names.
func FramedIndexes(set *IndexerSet) []int {
	var pos []int
	for i := range set.fns {
		if !set.byNamespace[i] {
			pos = append(pos, i)
		}
	}
	sort.Slice(pos, func(a, b int) bool { return set.names[pos[a]] < set.names[pos[b]] })
	return pos
}

// Write writes f to w, each value as held, and commits it. f is frozen:
// nothing here takes the store's lock.
func (st *Snapshots) Write(w *snapshot.Writer, f Frozen) error {
	framed := FramedIndexes(f.set)
	byKey := valuesByKey(f, framed)
	var buf, frame []byte
	var err error
	f.items.Range(func(key string, held any) bool {
		frame = AppendFrame(frame[:0], byKey[key], len(framed))
		buf = binary.AppendUvarint(buf[:0], uint64(len(frame)))
		buf = append(buf, frame...)
		if buf, err = st.AppendRecord(buf, key, held); err == nil {
			err = w.Add(key, buf)
		}
		return err == nil
	})
	if err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}

// Dictionary is what a snapshot's header keeps beside its records: the
// codec's cold-tier dictionary, nil without one. It is made once and never
// replaced, and no encoding is cold before it exists, so a header that
// reads it after the store was frozen (or, for a journal, after the
// snapshot it follows was) reads back every cold record of its file.
func (st *Snapshots) Dictionary() []byte { return st.codec.DictionaryBytes() }

// AppendRecord appends held's record: a compact store's encoding as it is,
// a cold one staying compressed (the file's header keeps the dictionary:
// see Dictionary); a plain store's object encoded.
func (st *Snapshots) AppendRecord(dst []byte, key string, held any) ([]byte, error) {
	if st.encoded {
		e, ok := held.(compact.Encoding)
		if !ok {
			return dst, fmt.Errorf("snapshot: %q holds a %T, not an encoding", key, held)
		}
		return e.AppendRecord(dst), nil
	}
	obj, ok := held.(runtime.Object)
	if !ok {
		return dst, fmt.Errorf("snapshot: %q holds a %T, not an API object", key, held)
	}
	e, err := st.codec.Encode(obj)
	if err != nil {
		return dst, fmt.Errorf("snapshot: encoding %q: %w", key, err)
	}
	return e.AppendRecord(dst), nil
}

// valuesByKey inverts the framed indexes of f: each key's values, by
// position in framed. Nil when nothing is framed, the common case.
func valuesByKey(f Frozen, framed []int) map[string][][]string {
	if len(framed) == 0 {
		return nil
	}
	byKey := make(map[string][][]string, f.items.Len())
	for j, pos := range framed {
		f.indexes[pos].Range(func(value string, members keySet) bool {
			members.Range(func(key string, _ struct{}) bool {
				vals := byKey[key]
				if vals == nil {
					vals = make([][]string, len(framed))
					byKey[key] = vals
				}
				vals[j] = append(vals[j], value)
				return true
			})
			return true
		})
	}
	return byKey
}

// AppendFrame appends the frame of n indexes' values (nil: none in any).
func AppendFrame(dst []byte, vals [][]string, n int) []byte {
	for j := range n {
		var vs []string
		if vals != nil {
			vs = vals[j]
		}
		dst = binary.AppendUvarint(dst, uint64(len(vs)))
		for _, v := range vs {
			dst = binary.AppendUvarint(dst, uint64(len(v)))
			dst = append(dst, v...)
		}
	}
	return dst
}

// errFrame is a value whose frame does not parse: the file's checksum
// matched, so it was written by another layout.
var errFrame = errors.New("malformed index values")

// splitValue returns a value's framed index values (n of them) and its
// record.
func splitValue(value []byte, n int) (vals [][]string, rec []byte, err error) {
	frame, rest, ok := cutBytes(value)
	if !ok {
		return nil, nil, errFrame
	}
	for j := range n {
		count, k := binary.Uvarint(frame)
		if k <= 0 || count > uint64(len(frame)) {
			return nil, nil, errFrame
		}
		frame = frame[k:]
		if count == 0 {
			continue
		}
		if vals == nil {
			vals = make([][]string, n)
		}
		for range count {
			var v []byte
			if v, frame, ok = cutBytes(frame); !ok {
				return nil, nil, errFrame
			}
			vals[j] = append(vals[j], string(v))
		}
	}
	if len(frame) != 0 {
		return nil, nil, errFrame
	}
	return vals, rest, nil
}

// cutBytes splits a uvarint-length-prefixed field off b.
func cutBytes(b []byte) (field, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// Read reads every record of r into staged, as a Replace of the store
// takes them: a compact store's as Preheld encodings with their index
// values, cold ones staying compressed with the dictionary the header
// keeps, which the codec adopts; a plain store's decoded. It returns the snapshot's version once
// the trailer verified; on an error staged is to be dropped.
func (st *Snapshots) Read(r *snapshot.Reader, staged map[string]any) (string, error) {
	if dict := r.Header().Dictionary; len(dict) > 0 {
		if err := st.codec.AdoptDictionary(dict); err != nil {
			return "", &snapshot.Error{Reason: snapshot.CorruptReason, Detail: "its cold records' dictionary cannot be used", Err: err}
		}
	}
	set := st.m.indexers.Load()
	framed := FramedIndexes(set)
	for i := 0; ; i++ {
		key, value, err := r.Next()
		if err == io.EOF {
			return r.Header().ResourceVersion, nil
		}
		if err != nil {
			return "", err
		}
		k := string(key)
		obj, err := st.LoadRecord(k, value, set, framed)
		if err != nil {
			return "", Undecodable("record", i, err)
		}
		staged[k] = obj
	}
}

// Undecodable is the error of the i-th record or change (what) that does
// not decode. It names neither the record's key nor the decoder's error,
// whose texts may quote the file's bytes: read before the checksum that
// would tell a damaged file, a "key" may be any of its bytes.
func Undecodable(what string, i int, err error) error {
	return &snapshot.Error{Reason: snapshot.CorruptReason, Detail: fmt.Sprintf("%s %d does not decode (%T)", what, i, err)}
}

// IdentityOf returns the UID and resourceVersion of a staged value (a
// compact store's Preheld encoding, decoded for the purpose, or an
// object).
func (st *Snapshots) IdentityOf(held any) (uid types.UID, rv string, err error) {
	if p, ok := held.(Preheld); ok {
		held = p.held
	}
	if e, ok := held.(compact.Encoding); ok {
		if held, err = st.codec.Decode(e); err != nil {
			return "", "", err
		}
	}
	m, err := objmeta.Accessor(held)
	if err != nil {
		return "", "", err
	}
	return m.GetUID(), m.GetResourceVersion(), nil
}

// LoadRecord turns one value into what staged keeps for key.
func (st *Snapshots) LoadRecord(key string, value []byte, set *IndexerSet, framed []int) (any, error) {
	vals, rec, err := splitValue(value, len(framed))
	if err != nil {
		return nil, err
	}
	if !st.encoded {
		return st.codec.DecodeRecord(rec)
	}
	e, err := st.codec.FromRecord(rec)
	if err != nil {
		return nil, err
	}
	return st.m.preheld(key, e, loadedIndex(set, key, vals, framed)), nil
}

// loadedIndex is a loaded object's heldIndex: its namespace from its key,
// the framed indexes' values by their positions in set.
func loadedIndex(set *IndexerSet, key string, vals [][]string, framed []int) heldIndex {
	h := heldIndex{set: set, namespaced: true}
	if ns, _, ok := strings.Cut(key, "/"); ok {
		h.namespace = ns
	}
	if vals != nil {
		h.vals = make([][]string, len(set.fns))
		for j, pos := range framed {
			h.vals[pos] = vals[j]
		}
	}
	return h
}

// Stage applies one catch-up change to staged: obj, already transformed,
// stored under key, or key deleted when obj is nil.
func (st *Snapshots) Stage(staged map[string]any, key string, obj any) error {
	if obj == nil {
		delete(staged, key)
		return nil
	}
	if !st.encoded {
		staged[key] = obj
		return nil
	}
	p, err := st.m.Prehold(key, obj)
	if err != nil {
		return err
	}
	staged[key] = p
	return nil
}

// HandOver returns staged's content in key order, the order of a LIST.
func HandOver(staged map[string]any) []any {
	keys := make([]string, 0, len(staged))
	for k := range staged {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	items := make([]any, len(keys))
	for i, k := range keys {
		items[i] = staged[k]
	}
	return items
}

// IndexerSet is the store's current generation of index functions.
func (st *Snapshots) IndexerSet() *IndexerSet { return st.m.IndexerSet() }

// Freeze is the store's current state, frozen to be written (Map.Freeze).
func (st *Snapshots) Freeze() Frozen { return st.m.Freeze() }
