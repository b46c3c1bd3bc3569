package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// traffic counts what an informer asks of the server and what it reads
// back. Counting happens where the informer's ListWatch calls the client,
// so every wrapper the informer puts around its ListerWatcher (watch-list
// semantics, a restart's probe and resumed watches) is seen as the server
// sees it.
type traffic struct {
	// listsLimited are LISTs with a limit (a restart's probe is limit=1);
	// listsFull those without one; watchLists WATCHes that ask for the
	// initial events (sendInitialEvents=true); watches the others.
	listsLimited, listsFull, watchLists, watches atomic.Int64
	// payload is the response bodies' bytes as the client decodes them
	// (after gzip); wire the bytes read from the TCP connections (TLS
	// records, compressed bodies, headers, HTTP/2 framing).
	payload, wire atomic.Int64
}

// requests is a copy of the request counters at one moment.
type requests struct {
	ListsLimited, ListsFull, WatchLists, Watches int64
	Payload, Wire                                int64
}

func (t *traffic) snapshot() requests {
	return requests{ListsLimited: t.listsLimited.Load(), ListsFull: t.listsFull.Load(),
		WatchLists: t.watchLists.Load(), Watches: t.watches.Load(), Payload: t.payload.Load(), Wire: t.wire.Load()}
}

func (t *traffic) countList(o metav1.ListOptions) {
	if o.Limit > 0 {
		t.listsLimited.Add(1)
	} else {
		t.listsFull.Add(1)
	}
}

func (t *traffic) countWatch(o metav1.ListOptions) {
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		t.watchLists.Add(1)
	} else {
		t.watches.Add(1)
	}
}

// instrument makes cfg count the bytes its clients read: the TCP bytes
// through a counting dialer, the bodies through a counting transport.
func (t *traffic) instrument(cfg *rest.Config) {
	var d net.Dialer
	cfg.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, n: &t.wire}, nil
	}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if resp != nil && resp.Body != nil {
				resp.Body = &countingBody{ReadCloser: resp.Body, n: &t.payload}
			}
			return resp, err
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
