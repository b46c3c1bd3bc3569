package fake

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// RoundTrip serves req in memory: the Cluster's handler runs in a goroutine of its own and
// streams its response through a pipe, so a watch's events reach the client as they are
// written. The goroutine ends when the handler returns: when the response is complete, when the
// client closes the body, or when the request's context ends.
func (c *Cluster) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	reader, writer := io.Pipe()
	resp := &pipeResponse{header: http.Header{}, body: writer, ready: make(chan struct{})}
	go func() {
		defer cancel()
		resp.finish(c.serve(resp, req.WithContext(ctx)))
	}()
	<-resp.ready
	if resp.err != nil {
		cancel()
		return nil, resp.err
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", resp.code, http.StatusText(resp.code)),
		StatusCode:    resp.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        resp.sent,
		Body:          &pipeBody{PipeReader: reader, cancel: cancel},
		ContentLength: -1,
		Request:       req,
	}, nil
}

// pipeResponse is the handler's side of an in-memory response. The status line and headers
// are handed over once, through ready; the body flows through the pipe.
type pipeResponse struct {
	header http.Header
	body   *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	// Set before ready is closed, read after.
	code int
	sent http.Header
	err  error
}

func (p *pipeResponse) Header() http.Header { return p.header }

func (p *pipeResponse) WriteHeader(code int) {
	p.once.Do(func() {
		p.code, p.sent = code, p.header.Clone()
		close(p.ready)
	})
}

func (p *pipeResponse) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return p.body.Write(b)
}

// Flush is a no-op: every Write reaches the reader directly.
func (p *pipeResponse) Flush() {}

// finish ends the response: err, when the handler wrote nothing, fails the round trip.
func (p *pipeResponse) finish(err error) {
	p.once.Do(func() {
		p.code, p.sent, p.err = http.StatusOK, p.header.Clone(), err
		close(p.ready)
	})
	_ = p.body.Close()
}

// pipeBody is the client's side: closing it stops the handler.
type pipeBody struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *pipeBody) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}
