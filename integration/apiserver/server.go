// Package apiserver runs a real Kubernetes API server (apiextensions-apiserver
// with an embedded etcd) inside the test process, on loopback ports only, and
// serves one namespaced custom resource, Widget, for informer tests.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Options shape the server.
type Options struct {
	// WatchCache turns on the API server's watch cache, as in a default
	// Kubernetes cluster; it also sends periodic bookmarks. With it off,
	// watches are served straight from etcd, so a watch from a compacted
	// revision gets 410 Gone.
	WatchCache bool
}

// Server is a running etcd plus an API server that can be stopped and
// started again on the same etcd, address and certificates.
type Server struct {
	t       testing.TB
	opts    Options
	dir     string
	port    int
	etcd    *etcdServer
	stopAPI func() error

	// StartDurations records how long each API server start took, until
	// /readyz answered 200.
	StartDurations []time.Duration
	// StopDurations records how long each StopAPIServer took.
	StopDurations []time.Duration
}

// Start runs etcd and the API server, registers the Widget CRD and waits
// until widgets are served. Everything is torn down when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{t: t, opts: opts, dir: t.TempDir()}
	var err error
	if s.port, err = freeLoopbackPort(); err != nil {
		t.Fatal(err)
	}
	if s.etcd, err = startEtcd(s.dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.etcd.stop)
	t.Cleanup(func() {
		if s.stopAPI != nil {
			if err := s.stopAPI(); err != nil {
				t.Errorf("stop API server: %v", err)
			}
		}
	})
	s.StartAPIServer()
	if err := registerWidgetCRD(context.Background(), s.Config()); err != nil {
		t.Fatal(err)
	}
	return s
}

// Config returns a fresh client configuration for the API server. It stays
// valid across API server restarts (same address, anonymous access). Callers
// may change it, e.g. to wrap its transport.
func (s *Server) Config() *rest.Config {
	return &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", s.port),
		// The server's certificate is self-signed and the server listens on
		// loopback only.
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             1000,
		Burst:           2000,
	}
}

// Dynamic returns a dynamic client over Config.
func (s *Server) Dynamic() dynamic.Interface {
	c, err := dynamic.NewForConfig(s.Config())
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// Compact compacts etcd up to its current revision and returns that
// revision. With the watch cache off, a watch from an older resource version
// then gets 410 Gone.
func (s *Server) Compact(ctx context.Context) int64 {
	rev, err := s.etcd.compact(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return rev
}

// StopAPIServer shuts the API server down, ending every open watch; etcd
// keeps running.
func (s *Server) StopAPIServer() {
	if s.stopAPI == nil {
		s.t.Fatal("API server is not running")
	}
	stop := s.stopAPI
	s.stopAPI = nil
	begin := time.Now()
	if err := stop(); err != nil {
		s.t.Fatalf("stop API server: %v", err)
	}
	s.StopDurations = append(s.StopDurations, time.Since(begin))
}

// StartAPIServer starts the API server on the same etcd, address and
// certificates and waits until it is ready and serves widgets.
func (s *Server) StartAPIServer() {
	s.t.Helper()
	if s.stopAPI != nil {
		s.t.Fatal("API server is already running")
	}
	begin := time.Now()
	stop, err := s.runAPIServer()
	if err != nil {
		s.t.Fatal(err)
	}
	s.stopAPI = stop
	if err := waitReady(s.Config()); err != nil {
		s.t.Fatal(err)
	}
	s.StartDurations = append(s.StartDurations, time.Since(begin))
}

// runAPIServer builds and runs the server in a goroutine and returns the
// function that stops it and waits for its exit.
func (s *Server) runAPIServer() (func() error, error) {
	o, err := s.serverOptions()
	if err != nil {
		return nil, err
	}
	config, err := o.Config()
	if err != nil {
		return nil, fmt.Errorf("API server config: %w", err)
	}
	// Every client may do anything: there is no kube-apiserver to delegate
	// authentication and authorization to.
	config.GenericConfig.Authentication.Authenticator = anonymous.NewAuthenticator(nil)
	config.GenericConfig.Authorization.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()
	// The core informers would watch a kube-apiserver that does not exist and
	// keep /readyz failing.
	config.GenericConfig.SharedInformerFactory = nil
	completed := config.Complete()
	// Complete turns discovery off because a kube-apiserver normally serves
	// it; here this server is the only one.
	completed.GenericConfig.EnableDiscovery = true
	server, err := completed.New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("new API server: %w", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.GenericAPIServer.PrepareRun().RunWithContext(ctx) }()
	return func() error {
		cancel(errors.New("test stops the API server"))
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			return errors.New("API server did not stop within a minute")
		}
	}, nil
}

func (s *Server) serverOptions() (*options.CustomResourceDefinitionsServerOptions, error) {
	o := options.NewCustomResourceDefinitionsServerOptions(io.Discard, io.Discard)
	// Stop within seconds: without this, shutdown waits up to the request
	// timeout (a minute) for open watches to end.
	o.ServerRunOptions.ShutdownSendRetryAfter = true
	ro := o.RecommendedOptions
	ro.Etcd.StorageConfig.Transport.ServerList = []string{s.etcd.url}
	ro.Etcd.EnableWatchCache = s.opts.WatchCache
	ro.SecureServing.BindAddress = net.IPv4(127, 0, 0, 1)
	ro.SecureServing.BindPort = s.port
	ro.SecureServing.ExternalAddress = net.IPv4(127, 0, 0, 1)
	ro.SecureServing.ServerCert.CertDirectory = filepath.Join(s.dir, "certs")
	ro.Authentication = nil
	ro.Authorization = nil
	ro.Admission = nil
	ro.Features.EnablePriorityAndFairness = false
	// Config() builds a Service lister from the core informers, so they need
	// a client configuration; it points at a closed loopback port and is
	// never used because the informers are dropped before the server starts.
	kubeconfig, err := s.unusedKubeconfig()
	if err != nil {
		return nil, err
	}
	ro.CoreAPI.CoreAPIKubeconfigPath = kubeconfig
	if err := o.Complete(); err != nil {
		return nil, fmt.Errorf("complete API server options: %w", err)
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("validate API server options: %w", err)
	}
	return o, nil
}

func (s *Server) unusedKubeconfig() (string, error) {
	path := filepath.Join(s.dir, "unused.kubeconfig")
	const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "http://127.0.0.1:1"}
  name: unused
contexts:
- context: {cluster: unused, user: unused}
  name: unused
current-context: unused
users:
- name: unused
  user: {}
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		return "", fmt.Errorf("write kubeconfig: %w", err)
	}
	return path, nil
}

// waitReady polls /readyz until it answers 200.
func waitReady(config *rest.Config) error {
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, config.Host+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("API server not ready: %w", err)
	}
	return nil
}
