package compact

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// A record is an Encoding as a snapshot file keeps it (docs/RESTART.md):
// one byte of flags, then the body as held, compressed bytes staying
// compressed: a cold record reads back with the dictionary its file keeps
// beside it (AdoptDictionary). The codec's tag is not written: it is a
// position in one process's list of codecs, so a loader supplies its own.

// recordFlags are the flags a record may carry.
const recordFlags = flagTypeMeta | flagCompressed

// AppendRecord appends e as a record to dst, copying its bytes without
// decoding them.
func (e Encoding) AppendRecord(dst []byte) []byte {
	l := e.layout()
	dst = append(dst, l.flags&recordFlags)
	return e.appendBody(dst, &l)
}

// errRecord is a record no Encoding could have made.
var errRecord = errors.New("compact: malformed record")

// FromRecord returns a new Encoding of c's with the flags and body of rec,
// a record made by AppendRecord from an encoding of a codec of the same
// type and format; rec is copied.
func (c *Codec) FromRecord(rec []byte) (Encoding, error) {
	flags, body, err := c.splitRecord(rec)
	if err != nil {
		return Encoding{}, err
	}
	return newEncoding(flags, c.tag, body)
}

// DecodeRecord decodes rec, a record as FromRecord takes it, into a fresh
// object, without making an Encoding first.
func (c *Codec) DecodeRecord(rec []byte) (runtime.Object, error) {
	flags, body, err := c.splitRecord(rec)
	if err != nil {
		return nil, err
	}
	return c.decodeBody(flags, body)
}

func (c *Codec) splitRecord(rec []byte) (byte, []byte, error) {
	if len(rec) == 0 || rec[0]&^recordFlags != 0 {
		return 0, nil, errRecord
	}
	if rec[0]&flagCompressed != 0 && c.compressor == nil && !c.HasDictionary() {
		return 0, nil, fmt.Errorf("%w: compressed, and the codec has neither a compressor nor a dictionary", errRecord)
	}
	return rec[0], rec[1:], nil
}

// RecordVersion names the record layout and the codecs' way of encoding
// each format; a snapshot of another RecordVersion is not loaded.
const RecordVersion = 1
