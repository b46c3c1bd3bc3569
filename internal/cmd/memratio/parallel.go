package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
)

// Making a row's objects (generating a fixture, marshalling it to JSON and
// decoding it as an informer does) is nearly all of a row's time: about 1 ms
// of CPU per realistic pod, minutes at 100k. The helpers here make the same
// objects faster, so that what a row measures does not change: the parent
// writes every fixture's JSON to a file once, and each row decodes that file
// on GOMAXPROCS goroutines.

// typedDecoder decodes JSON into the type its caller names, as the
// universal deserializer does, without first parsing the JSON to look for
// apiVersion and kind. The fixtures carry neither, as the items of a LIST
// do not, so that parse only ever found nothing and cost a sixth of a row.
func typedDecoder() kruntime.Decoder {
	return json.NewSerializerWithOptions(noKind{}, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})
}

// noKind is the MetaFactory of JSON without apiVersion and kind: the caller's
// default kind then applies, as with json.SimpleMetaFactory on such JSON.
type noKind struct{}

func (noKind) Interpret([]byte) (*schema.GroupVersionKind, error) {
	return &schema.GroupVersionKind{}, nil
}

// writeObjects writes the JSON of the first n fixtures of kind, one a line,
// to a new file in the temporary directory, and returns its name.
func writeObjects(kind string, n int) (string, error) {
	f, err := os.CreateTemp("", fmt.Sprintf("memratio-%s-%d-*.jsonl", kind, n))
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = inOrder(n, makers(kind, method((*source).json)), func(data []byte) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return filepath.Clean(f.Name()), nil
}

// objectsFile is the fixtures' JSON that the parent wrote for its rows (the
// -objects flag); empty, each row makes its own.
var objectsFile string

// each hands add the objects s.wire(0), …, s.wire(n-1) in order, decoded
// from objectsFile when there is one. Every object is decoded from its own
// JSON whichever goroutine decodes it, so the heap they occupy is the same
// as made in turn.
func (s *source) each(n int, add func(kruntime.Object) error) error {
	if objectsFile == "" {
		return inOrder(n, makers(s.kind, method((*source).wire)), add)
	}
	var files []*lines
	defer func() {
		for _, f := range files {
			f.f.Close()
		}
	}()
	return inOrder(n, makers(s.kind, func(own *source) func(int) kruntime.Object {
		file := openLines(objectsFile)
		files = append(files, file)
		return func(i int) kruntime.Object { return own.decodeJSON(file.line(i)) }
	}), add)
}

// maxLine bounds one object's JSON in the objects file.
const maxLine = 4 << 20

// lines reads one maker's lines of the objects file. Each maker reads the
// whole file and decodes only its own lines, which keeps the order without
// a reader to share.
type lines struct {
	name string
	f    *os.File
	r    *bufio.Reader
	next int
}

func openLines(name string) *lines {
	f, err := os.Open(name)
	if err != nil {
		panic(err)
	}
	return &lines{name: name, f: f, r: bufio.NewReaderSize(f, maxLine)}
}

// line returns line i, which must come after the last line returned; it is
// valid until the next call.
func (l *lines) line(i int) []byte {
	for ; l.next <= i; l.next++ {
		data, err := l.r.ReadSlice('\n')
		if err != nil {
			panic(fmt.Errorf("%s: line %d: %w", l.name, l.next+1, err))
		}
		if l.next == i {
			l.next++
			return bytes.TrimSuffix(data, []byte{'\n'})
		}
	}
	panic(fmt.Errorf("%s: line %d read out of order", l.name, i+1))
}

// inFlight is how many objects each maker may have ready ahead of the
// consumer: enough to ride out scheduling, few enough not to count.
const inFlight = 4

// makers returns one producer per GOMAXPROCS, each made by maker from its
// own source of kind (a PodSource is not safe for concurrent use).
func makers[T any](kind string, maker func(*source) func(int) T) []func(int) T {
	out := make([]func(int) T, runtime.GOMAXPROCS(0))
	for w := range out {
		own, err := newSource(kind)
		if err != nil {
			panic(err)
		}
		out[w] = maker(own)
	}
	return out
}

// method adapts a method of source to makers.
func method[T any](f func(*source, int) T) func(*source) func(int) T {
	return func(s *source) func(int) T { return func(i int) T { return f(s, i) } }
}

// inOrder hands consume produce[i%len(produce)](i) for i = 0, …, n-1 in
// order, each producer on its own goroutine. It returns consume's first
// error once every producer has exited.
func inOrder[T any](n int, produce []func(int) T, consume func(T) error) error {
	done := make(chan struct{})
	outs := make([]chan T, len(produce))
	var wg sync.WaitGroup
	for w, p := range produce {
		outs[w] = make(chan T, inFlight)
		wg.Go(func() {
			for i := w; i < n; i += len(produce) {
				select {
				case outs[w] <- p(i):
				case <-done:
					return
				}
			}
		})
	}
	defer wg.Wait()
	defer close(done)
	for i := range n {
		if err := consume(<-outs[i%len(outs)]); err != nil {
			return err
		}
	}
	return nil
}
