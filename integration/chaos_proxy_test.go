package integration

import (
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// chaosProxy is a TCP proxy on 127.0.0.1 in front of the API server that
// misbehaves on request: it drops every connection, stalls every byte for
// a while, truncates the next chunk each connection forwards to the
// client and closes it, or refuses connections for a while (its listener
// is closed, so a client's dial gets ECONNREFUSED). TLS passes through it
// untouched.
//
// mu guards the listener, the connections and the stall gate. Each
// connection has two copy goroutines owned by the proxy's WaitGroup; they
// end when either side closes, and close discards them all.
type chaosProxy struct {
	addr   string
	target string

	mu      sync.Mutex
	ln      net.Listener
	conns   map[*proxiedConn]struct{}
	stalled chan struct{} // non-nil while stalled; closed when the stall ends
	closed  bool
	wg      sync.WaitGroup
}

// proxiedConn is one client connection and its upstream.
type proxiedConn struct {
	client, server net.Conn
	once           sync.Once
	done           chan struct{}
	mu             sync.Mutex
	truncate       bool // cut the next chunk to the client short and close
	rng            *rand.Rand
}

func newChaosProxy(target string, seed uint64) (*chaosProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &chaosProxy{addr: ln.Addr().String(), target: target, ln: ln, conns: map[*proxiedConn]struct{}{}}
	p.serve(ln, seed)
	return p, nil
}

// serve accepts on ln until it is closed.
func (p *chaosProxy) serve(ln net.Listener, seed uint64) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for n := uint64(0); ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.connect(c, rand.New(rand.NewPCG(seed, n)))
		}
	}()
}

func (p *chaosProxy) connect(client net.Conn, rng *rand.Rand) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	pc := &proxiedConn{client: client, server: server, done: make(chan struct{}), rng: rng}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		pc.close()
		return
	}
	p.conns[pc] = struct{}{}
	p.wg.Add(2)
	go p.pump(pc, server, client, true)
	go p.pump(pc, client, server, false)
}

// pump copies src to dst until either side closes, waiting out stalls and
// honouring a truncation on the way to the client.
func (p *chaosProxy) pump(pc *proxiedConn, src, dst net.Conn, toClient bool) {
	defer p.wg.Done()
	defer p.forget(pc)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.waitStall(pc) {
			return
		}
		if n > 0 && toClient && pc.takeTruncate() {
			_, _ = dst.Write(buf[:pc.rng.IntN(n)])
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitStall blocks while the proxy is stalled; false if pc closed meanwhile.
func (p *chaosProxy) waitStall(pc *proxiedConn) bool {
	p.mu.Lock()
	gate := p.stalled
	p.mu.Unlock()
	if gate == nil {
		return true
	}
	select {
	case <-gate:
		return true
	case <-pc.done:
		return false
	}
}

func (p *chaosProxy) forget(pc *proxiedConn) {
	pc.close()
	p.mu.Lock()
	delete(p.conns, pc)
	p.mu.Unlock()
}

func (pc *proxiedConn) close() {
	pc.once.Do(func() {
		close(pc.done)
		pc.client.Close()
		pc.server.Close()
	})
}

func (pc *proxiedConn) takeTruncate() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	t := pc.truncate
	pc.truncate = false
	return t
}

// drop closes every connection, like a network reset.
func (p *chaosProxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.conns {
		pc.close()
	}
}

// truncate makes every connection forward only part of its next chunk to
// the client and close.
func (p *chaosProxy) truncate() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.conns {
		pc.mu.Lock()
		pc.truncate = true
		pc.mu.Unlock()
	}
}

// stall holds every byte in both directions for d; connections stay open.
func (p *chaosProxy) stall(d time.Duration) {
	p.mu.Lock()
	if p.stalled == nil {
		p.stalled = make(chan struct{})
	}
	p.mu.Unlock()
	time.Sleep(d)
	p.unstall()
}

func (p *chaosProxy) unstall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
}

// refuse closes the listener for d, so new connections are refused, then
// listens on the same address again. Open connections are kept.
func (p *chaosProxy) refuse(d time.Duration, seed uint64) error {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	p.mu.Unlock()
	if ln == nil {
		return errors.New("proxy already refusing")
	}
	ln.Close()
	time.Sleep(d)
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		ln.Close()
		return nil
	}
	p.ln = ln
	p.serve(ln, seed)
	return nil
}

// close stops listening, ends every stall and connection and waits for
// every goroutine of the proxy.
func (p *chaosProxy) close() {
	p.mu.Lock()
	p.closed = true
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	p.mu.Unlock()
	p.unstall()
	p.drop()
	p.wg.Wait()
}
