package integration

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/openinformer/cache/integration/apiserver"
)

// byteMeter counts the response bytes a client reads, after the transport's decompression:
// what its decoder has to parse.
type byteMeter struct{ n atomic.Int64 }

type meteredBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b meteredBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// client returns a dynamic client on srv whose reads m counts.
func (m *byteMeter) client(srv *apiserver.Server) (dynamic.Interface, error) {
	config := srv.Config()
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				resp.Body = meteredBody{ReadCloser: resp.Body, n: &m.n}
			}
			return resp, err
		})
	})
	return dynamic.NewForConfig(config)
}

// processCPU is the user and system CPU time the test process has used so far, API server
// included.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func kib(n int64) string { return fmt.Sprintf("%.0fKiB", float64(n)/1024) }
