package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Request kinds counted by trafficProbe.
const (
	kindList      = "list"
	kindGet       = "get"
	kindWatch     = "watch"
	kindWatchList = "watch-list" // watch with sendInitialEvents=true
	kindOther     = "other"
	// unanswered suffixes a kind to count its requests that got no
	// response (refused, reset, cut before the headers): the server did
	// no work for them.
	unanswered = " unanswered"
)

// trafficProbe sits in a client's transport. It counts requests by kind,
// spots 410 Gone answers (as a status or as an ERROR event in a watch stream)
// and can cut open watch streams and hold new ones, the way a network
// partition between informer and server would.
type trafficProbe struct {
	mu      sync.Mutex
	counts  map[string]int
	gone    int
	held    chan struct{} // non-nil while new watches are held
	streams map[*probedBody]struct{}
	trace   []string // one line per list, watch and watch-list request and per stream end
}

func newTrafficProbe() *trafficProbe {
	return &trafficProbe{counts: map[string]int{}, streams: map[*probedBody]struct{}{}}
}

// note appends a line to the trace, stamped with the time of day.
func (p *trafficProbe) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trace = append(p.trace, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
}

// traced returns the trace so far.
func (p *trafficProbe) traced() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.trace)
}

// wrap installs the probe in config's transport chain.
func (p *trafficProbe) wrap(config *rest.Config) *rest.Config {
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			return p.roundTrip(rt, req)
		})
	})
	return config
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func requestKind(req *http.Request) string {
	q := req.URL.Query()
	switch {
	case req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/widgets"):
		return kindOther
	case !strings.HasSuffix(req.URL.Path, "/widgets"):
		return kindGet
	case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
		return kindWatchList
	case q.Get("watch") == "true":
		return kindWatch
	default:
		return kindList
	}
}

func (p *trafficProbe) roundTrip(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	kind := requestKind(req)
	p.mu.Lock()
	p.counts[kind]++
	held := p.held
	p.mu.Unlock()
	if held != nil && (kind == kindWatch || kind == kindWatchList) {
		select {
		case <-held:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		p.mu.Lock()
		p.counts[kind+unanswered]++
		p.mu.Unlock()
	}
	if kind == kindList || kind == kindWatch || kind == kindWatchList {
		q := req.URL.Query()
		outcome := fmt.Sprint(err)
		if err == nil {
			outcome = resp.Status
		}
		p.note("%s rv=%q limit=%s: %s", kind, q.Get("resourceVersion"), q.Get("limit"), outcome)
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusGone {
		p.mu.Lock()
		p.gone++
		p.mu.Unlock()
	}
	if kind == kindWatch || kind == kindWatchList {
		resp.Body = p.track(resp.Body, kind)
	}
	return resp, nil
}

func (p *trafficProbe) track(body io.ReadCloser, kind string) *probedBody {
	b := &probedBody{ReadCloser: body, probe: p, kind: kind, opened: time.Now()}
	p.mu.Lock()
	p.streams[b] = struct{}{}
	p.mu.Unlock()
	return b
}

// cutAndHold ends every open watch stream cleanly (the informer sees the
// stream close, as on a server-side timeout) and holds new watch requests
// until release is called.
func (p *trafficProbe) cutAndHold() (release func()) {
	held := make(chan struct{})
	p.mu.Lock()
	p.held = held
	streams := p.streams
	p.streams = map[*probedBody]struct{}{}
	p.mu.Unlock()
	for b := range streams {
		b.cut()
	}
	return func() {
		p.mu.Lock()
		p.held = nil
		p.mu.Unlock()
		close(held)
	}
}

// snapshot returns the request counts and the number of 410 answers seen.
func (p *trafficProbe) snapshot() (map[string]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	counts := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		counts[k] = v
	}
	return counts, p.gone
}

// probedBody is a watch response body that can be cut and that reports
// 410 ERROR events to its probe.
type probedBody struct {
	io.ReadCloser
	probe  *trafficProbe
	kind   string
	opened time.Time
	bytes  int
	ended  bool // the end of the stream is in the trace
	mu     sync.Mutex
	tail   []byte
	isCut  bool
	closed bool
}

var goneEvent = []byte(`"code":410`)

func (b *probedBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	b.mu.Lock()
	// Keep the end of the previous read so a marker split across reads
	// is still found.
	window := append(b.tail, buf[:n]...)
	b.tail = window[max(0, len(window)-len(goneEvent)+1):]
	isCut := b.isCut
	b.bytes += n
	endNow, read := err != nil && !b.ended, b.bytes
	b.ended = b.ended || err != nil
	b.mu.Unlock()
	if endNow {
		b.probe.note("  %s stream ended after %v, %d bytes: %v", b.kind, time.Since(b.opened).Round(time.Millisecond), read, err)
	}
	if bytes.Contains(window, goneEvent) {
		b.probe.mu.Lock()
		b.probe.gone++
		b.probe.mu.Unlock()
	}
	if isCut {
		return 0, io.EOF
	}
	return n, err
}

func (b *probedBody) cut() {
	b.mu.Lock()
	b.isCut = true
	b.mu.Unlock()
	_ = b.Close()
}

func (b *probedBody) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	endNow, read := !b.ended, b.bytes
	b.ended = true
	b.mu.Unlock()
	if endNow {
		b.probe.note("  %s stream closed by the client after %v, %d bytes", b.kind, time.Since(b.opened).Round(time.Millisecond), read)
	}
	b.probe.mu.Lock()
	delete(b.probe.streams, b)
	b.probe.mu.Unlock()
	return b.ReadCloser.Close()
}
