package snapshot

import (
	"bytes"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the Reader: it must refuse them with
// an *Error or accept them, never panic nor allocate past the file's size;
// and a file it accepts must be exactly what a Writer makes of the same
// header and records. Seeds are in testdata/fuzz/FuzzReader.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), nil)
		if err != nil {
			if ReasonOf(err) == 0 {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		var recs []record
		for {
			k, v, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if ReasonOf(err) == 0 {
					t.Fatalf("untyped error %v", err)
				}
				return
			}
			recs = append(recs, record{string(k), string(v)})
		}
		if again := fileBytes(t, r.Header(), recs); !bytes.Equal(again, data) {
			t.Fatalf("accepted a file a Writer does not write:\n%q\nrewritten:\n%q", data, again)
		}
	})
}
