package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// servers are the etcd and kube-apiserver child processes.
type servers struct {
	etcd, apiserver *exec.Cmd
	host, token     string
}

// startServers starts etcd, then kube-apiserver against it, under dir, and
// waits until the API server's /readyz answers 200.
func startServers(apiserver, dir string) (*servers, error) {
	s := &servers{}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	s.etcd = exec.Command(self, "-role=etcd", "-etcd-dir="+filepath.Join(dir, "etcd"),
		"-etcd-port="+strconv.Itoa(ports[0]), "-etcd-peer-port="+strconv.Itoa(ports[1]))
	s.etcd.Stderr = os.Stderr
	s.etcd.SysProcAttr = dieWithParent()
	out, err := s.etcd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.etcd.Start(); err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		s.stop()
		return nil, fmt.Errorf("etcd did not start (%q, %v)", line, err)
	}

	args, err := apiserverArgs(dir, ports[2], ports[0])
	if err != nil {
		s.stop()
		return nil, err
	}
	s.token = args.token
	s.host = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	log, err := os.Create(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.apiserver = exec.Command(apiserver, args.flags...)
	s.apiserver.Stdout, s.apiserver.Stderr = log, log
	s.apiserver.SysProcAttr = dieWithParent()
	if err := s.apiserver.Start(); err != nil {
		s.stop()
		return nil, fmt.Errorf("start %s: %w", apiserver, err)
	}
	if err := s.waitReady(3 * time.Minute); err != nil {
		s.stop()
		return nil, fmt.Errorf("%w (log: %s)", err, log.Name())
	}
	return s, nil
}

// apiserverFlags are kube-apiserver's command line and the token it accepts.
type apiserverFlags struct {
	flags []string
	token string
}

// apiserverArgs writes the token file and service-account key under dir and
// returns the flags of ../shared/docs/REAL-APISERVER.md's Option 2, plus the
// ServiceAccount admission plugin off: no controller-manager creates the
// service accounts, and the pods carry their token volume already.
func apiserverArgs(dir string, port, etcdPort int) (apiserverFlags, error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return apiserverFlags{}, err
	}
	token := hex.EncodeToString(raw)
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+",bench,bench,system:masters\n"), 0o600); err != nil {
		return apiserverFlags{}, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return apiserverFlags{}, err
	}
	keyFile := filepath.Join(dir, "sa.key")
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return apiserverFlags{}, err
	}
	return apiserverFlags{token: token, flags: []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--authorization-mode=AlwaysAllow",
		"--token-auth-file=" + tokens,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + keyFile,
		"--service-account-signing-key-file=" + keyFile,
		"--service-cluster-ip-range=10.96.0.0/24",
		"--endpoint-reconciler-type=none",
		"--disable-admission-plugins=ServiceAccount",
	}}, nil
}

// restConfig is a client of the servers: protobuf, no client-side rate limit.
func (s *servers) restConfig() *rest.Config {
	return clientConfig(s.host, s.token)
}

func clientConfig(host, token string) *rest.Config {
	return &rest.Config{
		Host:            host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		ContentConfig: rest.ContentConfig{
			ContentType:        "application/vnd.kubernetes.protobuf",
			AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json",
		},
		QPS: -1,
	}
}

func (s *servers) waitReady(limit time.Duration) error {
	rt, err := rest.TransportFor(s.restConfig())
	if err != nil {
		return err
	}
	client := &http.Client{Transport: rt, Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.host+"/readyz", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver not ready after %v", limit)
}

// stop ends the children it started, the API server first, and waits for them.
func (s *servers) stop() {
	for _, cmd := range []*exec.Cmd{s.apiserver, s.etcd} {
		if cmd == nil || cmd.Process == nil {
			continue
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

// dieWithParent makes a child process end when the harness does, even
// when the harness is killed before it can stop its children.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
